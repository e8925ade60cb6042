"""A batch the database refuses for a reason of its own: stored one message at a time.

``store_batch`` commits a batch whole. A refusal that does not mean "the database is
away" (``DatabaseUnavailable``, retried by the caller) comes from one message that no
check of the intake foresaw: a value a column cannot take, a constraint or trigger added
by the site's database administrator. Without this, that one message would stop the
commit for every table, and come back to stop it again after each restart.

Here the batch is stored again message by message. A message the database refuses on
its own is **quarantined**: kept in ``messages`` with a ``problem`` that names the
refusal, and adding nothing to the rounds or alerts, so that it is stored, acknowledged
and counted in its table's feed like any message with a problem. If even that row is
refused, it is kept once more with the text as sent inside a JSON string
(``{"quarantined": "<the payload>"}``), which any text column takes. A refusal of that
too means the database takes no message at all (a role without ``INSERT``, say): the
error is raised, nothing is acknowledged, and the recorder stops with it, as it did
before for every refusal (docs/decisions/recorder.md).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from table_controller.recorder.errors import DatabaseUnavailable
from table_controller.recorder.intake import LATEST, FeedMessage
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import Committed, store_batch

log = logging.getLogger(__name__)

QUARANTINED: Final = "not stored as sent: the database refused it"
_WHY_MAX: Final = 300  # characters of the database's own message kept in ``problem``


class Storing:
    """A batch being stored, and what of it is stored so far.

    ``step`` stores what is left (``store_batch``; one message at a time once the batch is
    refused for a reason of its own, with a message refused on its own quarantined). If
    the database goes away part way through that, the messages stored one by one stay
    counted here: the caller's retry goes on with the rest, and they still reach the live
    feed as new, not as duplicates of themselves."""

    def __init__(self, batch: Sequence[FeedMessage]) -> None:
        self._left = list(batch)
        self._new: list[FeedMessage] = []
        self._duplicates = 0

    async def step(self, db: Backend, *, received: str) -> Committed:
        """Store what is left; ``DatabaseUnavailable`` with the rest left for the next."""
        if self._left:
            try:
                self._add(await store_batch(db, self._left, received=received))
                self._left = []
            except DatabaseUnavailable:
                raise
            except Exception as exc:
                if len(self._left) == 1:
                    self._add(await _quarantine(db, self._left[0], exc, received))
                    self._left = []
                else:
                    log.error(
                        "the database refused a batch of %d messages (%s): storing them one by one",
                        len(self._left),
                        _why(exc),
                    )
                    while self._left:
                        self._add(await Storing(self._left[:1]).step(db, received=received))
                        del self._left[0]
        return Committed(new=list(self._new), duplicates=self._duplicates)

    def _add(self, done: Committed) -> None:
        self._new += done.new
        self._duplicates += done.duplicates


async def _quarantine(
    db: Backend, msg: FeedMessage, refused: Exception, received: str
) -> Committed:
    where = f"{msg.leaf.value} {msg.id} of {msg.site}/{msg.table}"
    if msg.leaf in LATEST:
        # Only the newest status, state or stats is kept, in ``latest``: the next replaces it.
        log.error("the database refused %s (%s): not kept", where, _why(refused))
        return Committed(new=[], duplicates=0)
    problem = f"{QUARANTINED}: {_why(refused)}"
    log.error("the database refused %s: kept quarantined (%s)", where, _why(refused))
    try:
        return await store_batch(db, [replace(msg, problem=problem)], received=received)
    except DatabaseUnavailable:
        raise
    except Exception as exc:
        log.error("the database refused %s with its problem too (%s)", where, _why(exc))
    wrapped = replace(
        msg,
        payload=json.dumps({"quarantined": msg.payload}, ensure_ascii=True),
        problem=f"{problem}; the payload as sent is the string `quarantined`",
    )
    return await store_batch(db, [wrapped], received=received)


def _why(exc: BaseException) -> str:
    """The refusal on one line, in ASCII: what it quotes of the message may be what the
    database could not take (a NUL, say)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= _WHY_MAX else text[: _WHY_MAX - 3] + "..."
