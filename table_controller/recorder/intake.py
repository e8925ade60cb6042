"""A received MQTT message as the recorder stores it (``docs/feed.md``).

The envelope (``schema``, ``id``, ``table``, ``site``, ``ts``, and on
``events``, ``rounds`` and ``alerts`` also ``epoch`` and ``feed_seq``) must
parse, or the message cannot be stored by its ``id``: ``IntakeError``, and
``unparsed.py`` keeps what can be kept of it. The body is checked against the
feed's payload model; a body that does not validate is still stored, with the
reason in ``problem``: a message the table holds until acknowledged must never
be refused for good by a newer schema than ours (it would stay a gap for ever).

The feed's models do not declare ``feed_seq`` everywhere yet: a model that
forbids exactly the feed's sequencing fields (``feed_seq``, ``epoch``,
``prev_hash``, ``hash``) still validates the rest.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter, ValidationError

from table_controller.feed.common import Ident
from table_controller.feed.payloads import (
    TABLE_EVENT,
    TableAlert,
    TableState,
    TableStats,
    TableStatus,
    WarRound,
    rfc3339,
)
from table_controller.recorder.storable import (
    LARGEST,
    TEXT_PROBLEM,
    may_hold_unstorable,
    storable,
    too_large,
)
from table_controller.recorder.times import parse_time


class Leaf(StrEnum):
    """The last topic level: what the message is (docs/feed.md's topic tables)."""

    STATUS = "status"
    STATE = "state"
    STATS = "stats"
    EVENTS = "events"
    ROUNDS = "rounds"
    ALERTS = "alerts"


# Non-retained topics carry ``feed_seq`` and are stored one row per message; the
# retained ones keep only the newest per table.
SEQUENCED: Final = frozenset({Leaf.EVENTS, Leaf.ROUNDS, Leaf.ALERTS})
LATEST: Final = frozenset({Leaf.STATUS, Leaf.STATE, Leaf.STATS})
FEED_FIELDS: Final = frozenset({"feed_seq", "epoch", "prev_hash", "hash"})
# What a table of another version may do to a body: send fields this one does not know,
# or leave out fields it does.
_OTHER_VERSION: Final = frozenset({"extra_forbidden", "missing"})
REPLAY_UNAVAILABLE: Final = "REPLAY_UNAVAILABLE"
# How the problem of a message published on another table's topic than its own begins.
MISPLACED: Final = "published on"

_BODY: Final[dict[Leaf, TypeAdapter[Any]]] = {
    Leaf.STATUS: TypeAdapter(TableStatus),
    Leaf.STATE: TypeAdapter(TableState),
    Leaf.STATS: TypeAdapter(TableStats),
    Leaf.EVENTS: TABLE_EVENT,
    Leaf.ROUNDS: TypeAdapter(WarRound),
    Leaf.ALERTS: TypeAdapter(TableAlert),
}
# "… feed_seq 3..5, 8: no longer held" (the table's message names the runs).
_RUNS: Final = re.compile(r"feed_seq\s+([\d.,\s-]+)")
_RUN: Final = re.compile(r"^(\d+)(?:\s*(?:\.\.|-)\s*(\d+))?\Z")


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_: Ident = Field(alias="schema")
    id: Ident
    table: Ident
    site: Ident
    ts: str
    epoch: Ident | None = None
    feed_seq: Annotated[StrictInt, Field(ge=1, le=LARGEST)] | None = None


class IntakeError(ValueError):
    """The message has no usable envelope: it cannot be stored by its id."""


@dataclass(frozen=True, slots=True)
class FeedMessage:
    """One received message, ready to store."""

    id: str
    site: str
    table: str
    leaf: Leaf
    prefix: str  # the table's topic prefix: where its ``ack`` and ``replay`` go
    schema: str
    ts: str  # RFC 3339, UTC, milliseconds: sorts as text in both databases
    epoch: str | None
    feed_seq: int | None
    payload: str
    body: dict[str, Any]
    problem: str | None
    unparsed: bool = False  # its envelope did not parse: kept by ``unparsed.kept_unparsed``
    other_version: bool = False  # only fields unknown to this version, or left out, are wrong

    @property
    def readable(self) -> bool:
        """Every field it has that this version knows is as the schema says: it may be a
        table's latest ``status``, ``state`` or ``stats``, which the pages read (a dash for
        what is left out). One with a list for its devices, say, is not."""
        return self.usable or (self.other_version and not self.misplaced)

    @property
    def usable(self) -> bool:
        """Its body validates (text shown as U+FFFD aside): it counts as a round or alert."""
        return self.problem is None or self.problem == TEXT_PROBLEM

    @property
    def misplaced(self) -> bool:
        """Published on another table's topic than the one its payload names: stored as it
        came (with its ``problem``), but counted in no table's feed (docs/recorder.md)."""
        levels = self.prefix.split("/")
        return len(levels) >= 2 and (levels[-1] != self.table or levels[-3:-2] != [self.site])

    @property
    def key(self) -> tuple[str, str, str] | None:
        """(site, table, epoch) of a sequenced message, else None."""
        if self.leaf not in SEQUENCED or self.epoch is None or self.feed_seq is None:
            return None
        if self.misplaced:
            return None
        return (self.site, self.table, self.epoch)


def parse_message(topic: str, payload: bytes) -> FeedMessage:
    """A message from ``casino/<site>/table/<table>/<leaf>``; IntakeError if unusable."""
    prefix, _, last = topic.rpartition("/")
    try:
        leaf = Leaf(last)
    except ValueError as exc:
        raise IntakeError(f"{topic}: not a feed topic") from exc
    try:
        text = payload.decode("utf-8")
        body = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IntakeError(f"{topic}: not UTF-8 JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise IntakeError(f"{topic}: a payload is a JSON object")
    scrubbed = False
    if may_hold_unstorable(text):
        clean = storable(body)
        scrubbed, body = clean != body, clean
    try:
        env = _Envelope.model_validate(body)
        ts = rfc3339(parse_time(env.ts))
    except ValidationError as exc:
        raise IntakeError(f"{topic}: envelope: {_first_error(exc)}") from exc
    except ValueError as exc:
        raise IntakeError(f"{topic}: envelope: ts: {exc}") from exc
    problem, other_version = _check(leaf, body)
    large = too_large(body)
    if large is not None:
        problem = f"{leaf.value}: {large}: beyond ±{LARGEST}, the feed's largest whole number"
        other_version = False
    if scrubbed:
        problem = TEXT_PROBLEM + (f"; {problem}" if problem else "")
    msg = FeedMessage(
        id=env.id,
        site=env.site,
        table=env.table,
        leaf=leaf,
        prefix=prefix,
        schema=env.schema_,
        ts=ts,
        epoch=env.epoch,
        feed_seq=env.feed_seq,
        payload=text,
        body=body,
        problem=problem,
        other_version=other_version,
    )
    if msg.misplaced:
        problem = f"{MISPLACED} {topic} by table {env.table!r} of site {env.site!r}"
        msg = replace(msg, problem=problem)
    return msg


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])


def _check(leaf: Leaf, body: dict[str, Any]) -> tuple[str | None, bool]:
    """(problem, other_version): the body's first problem, and whether fields this version
    does not know, or leaves out, are its only problems (a table of another version)."""
    try:
        _BODY[leaf].validate_python(body)
    except ValidationError as exc:
        real = [
            e
            for e in exc.errors()
            if not (e["type"] == "extra_forbidden" and e["loc"] and e["loc"][-1] in FEED_FIELDS)
        ]
        if real:
            loc = ".".join(str(p) for p in real[0]["loc"])
            other = all(e["type"] in _OTHER_VERSION for e in real)
            return f"{leaf.value}: {loc}: {real[0]['msg']}", other
    return None, False


def announced(msg: FeedMessage) -> tuple[str, int] | None:
    """The ``feed`` a ``status`` announces: (epoch, last_feed_seq), or None."""
    feed = msg.body.get("feed") if msg.leaf is Leaf.STATUS else None
    if not isinstance(feed, dict):
        return None
    epoch, last = feed.get("epoch"), feed.get("last_feed_seq")
    if isinstance(epoch, str) and epoch and type(last) is int and last >= 0:
        return epoch, last
    return None


def unavailable(msg: FeedMessage) -> tuple[str, list[tuple[int, int]]] | None:
    """(epoch, ranges) of a ``REPLAY_UNAVAILABLE`` alert, or None.

    The ranges come from ``from_feed_seq``/``to_feed_seq`` when the alert
    carries them, else from the runs its message names after ``feed_seq``
    (``3..5, 8``; docs/feed.md: the alert names the range); the epoch is the
    alert's own, the epoch the table deals in.
    """
    body = msg.body
    if msg.leaf is not Leaf.ALERTS or body.get("code") != REPLAY_UNAVAILABLE:
        return None
    if body.get("resolved_by") is not None or msg.epoch is None:
        return None
    first, last = body.get("from_feed_seq"), body.get("to_feed_seq")
    if type(first) is int and type(last) is int:
        ranges = [(first, last)]
    else:
        ranges = parse_runs(str(body.get("message", "")))
    ranges = [(a, b) for a, b in ranges if 1 <= a <= b]
    return (msg.epoch, ranges) if ranges else None


def parse_runs(message: str) -> list[tuple[int, int]]:
    """The ``feed_seq`` runs a message names: ``feed_seq 3..5, 8`` -> [(3, 5), (8, 8)]."""
    found = _RUNS.search(message)
    if found is None:
        return []
    out = []
    for part in found.group(1).split(","):
        run = _RUN.match(part.strip().rstrip("."))
        if run is not None:
            a = int(run.group(1))
            out.append((a, int(run.group(2) or a)))
    return out
