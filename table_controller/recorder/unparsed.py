"""A feed message whose envelope does not parse, kept all the same (docs/recorder.md).

``parse_message`` refuses a message that cannot be stored by its ``id``. On a sequenced
topic (``events``, ``rounds``, ``alerts``) dropping it costs more than the message: its
``feed_seq`` stays a gap, the recorder asks for it, the table sends the same bytes again,
and they are dropped again, for ever. The table's acks stop at that gap and its journal
grows behind it until its disk is full.

So such a message is stored under an id of its own: ``unparsed-`` and the SHA-256 of its
bytes (the same bytes sent again are the same message, stored once). Its ``problem``
says why. Its site and table are its topic's (the levels the broker's access list gave
that table's account). Its ``epoch`` and ``feed_seq``, when both can be read from it, place
it in the table's feed like any message with a problem, so that the acks move past it. It
adds nothing to rounds, alerts or the live feed. Bytes that are not a JSON object are
kept as ``{"unparsed": "<the bytes as text>"}``, undecodable bytes as ``\\xNN``.

A retained ``status``, ``state`` or ``stats`` is still dropped: nothing waits on it, and
the next one replaces it.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, Final

from table_controller.feed.payloads import rfc3339
from table_controller.recorder.intake import SEQUENCED, FeedMessage, Leaf
from table_controller.recorder.storable import LARGEST, storable
from table_controller.recorder.times import parse_time

ID_PREFIX: Final = "unparsed-"
UNKNOWN_SCHEMA: Final = "unknown"
_IDENT_MAX: Final = 128


def kept_unparsed(
    topic: str, payload: bytes, why: str, *, now: datetime | None = None
) -> FeedMessage | None:
    """The message to store for a refused one on a sequenced topic, else None (dropped)."""
    levels = topic.split("/")
    if len(levels) < 5 or levels[-3] != "table" or levels[-1] not in SEQUENCED:
        return None
    site, table = _ident(levels[-4]), _ident(levels[-2])
    if site is None or table is None:
        return None
    body = _object(payload)
    if body is None:
        text = json.dumps({"unparsed": payload.decode("utf-8", "backslashreplace")})
        body = {}
    else:
        text = payload.decode("utf-8")
    epoch, feed_seq = _place(body)
    return FeedMessage(
        id=ID_PREFIX + hashlib.sha256(payload).hexdigest(),
        site=site,
        table=table,
        leaf=Leaf(levels[-1]),
        prefix="/".join(levels[:-1]),
        schema=_ident(body.get("schema")) or UNKNOWN_SCHEMA,
        ts=_ts(body.get("ts"), now),
        epoch=epoch,
        feed_seq=feed_seq,
        payload=text,
        body={},
        problem=f"{why}; kept under an id of its own",
        unparsed=True,
    )


def _object(payload: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return storable(body) if isinstance(body, dict) else None


def _ident(value: object) -> str | None:
    if isinstance(value, str) and 1 <= len(value) <= _IDENT_MAX:
        return str(storable(value))
    return None


def _place(body: dict[str, Any]) -> tuple[str | None, int | None]:
    """(epoch, feed_seq) as far as they can be read: an ``epoch`` given but unreadable
    leaves the message out of every feed (it would be guessed into the current one)."""
    seq = body.get("feed_seq")
    feed_seq = seq if type(seq) is int and 1 <= seq <= LARGEST else None
    if body.get("epoch") is None:
        return None, feed_seq  # as an alert is sent: it takes the table's current epoch
    epoch = _ident(body["epoch"])
    return (epoch, feed_seq) if epoch is not None else (None, None)


def _ts(value: object, now: datetime | None) -> str:
    try:
        return rfc3339(parse_time(value))
    except ValueError:  # parse_time's, an overflow included
        return rfc3339(now or datetime.now(UTC))
