"""Seat sessions (``docs/recorder.md``, "Ratings, pace and hold"), from the stored round records.

A position's session starts with its first round with an initial wager in
action and ends after ``end_after`` (3) rounds in a row without one. A void
round (a misdeal) was never played: it neither counts for a session nor as
an empty round. The session's time on game runs from its first round's
``started`` to its last wagered round's ``ended``. Only rounds ended inside
the asked window are read, so a session cut by the window's edge is cut too;
one still open at the end (fewer than ``end_after`` empty rounds since its
last wager) says ``open: true``. No player identity is needed or stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from table_controller.recorder.ratings.edges import priced
from table_controller.recorder.ratings.stored import StoredRound, stored_rounds
from table_controller.recorder.ratings.tally import Tally, in_action
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.times import parse_time

Json = dict[str, Any]
END_AFTER_EMPTY: Final = 3


def initial_wager(position: Json) -> bool:
    """The position played the round: an initial wager in action."""
    return any(w.get("spot") == "initial" and in_action(w) for w in position.get("wagers", []))


@dataclass(slots=True)
class _Session:
    site: str
    table: str
    position: int
    start: str
    end: str
    tally: Tally = field(default_factory=Tally)
    empty: int = 0

    def json(self, *, open_: bool) -> Json:
        minutes = (parse_time(self.end) - parse_time(self.start)).total_seconds() / 60
        return {
            "site": self.site,
            "table": self.table,
            "position": self.position,
            "start": self.start,
            "end": self.end,
            "minutes": round(minutes, 2),
            "open": open_,
        } | self.tally.figures()


def seat_sessions(rounds: Iterable[StoredRound], end_after: int = END_AFTER_EMPTY) -> list[Json]:
    """Every position's sessions over ``rounds`` (per table, oldest first)."""
    if end_after < 1:
        raise ValueError(f"end_after must be at least 1, not {end_after}")
    done: list[Json] = []
    open_: dict[tuple[str, str, int], _Session] = {}
    for stored in rounds:
        record = stored.record
        if record.get("void"):
            continue
        playing = {p["position"]: p for p in record.get("positions", []) if initial_wager(p)}
        edges = priced(record, stored.decks) if playing else None
        for key, session in list(open_.items()):
            if key[:2] == (stored.site, stored.table) and key[2] not in playing:
                session.empty += 1
                if session.empty >= end_after:
                    done.append(session.json(open_=False))
                    del open_[key]
        for number, position in playing.items():
            key = (stored.site, stored.table, number)
            found = open_.get(key)
            if found is None:
                start = record.get("started") or record["ended"]
                found = open_[key] = _Session(stored.site, stored.table, number, start, start)
            session = found
            assert edges is not None
            session.tally.add(position, edges)
            session.end = record["ended"]
            session.empty = 0
    done += [s.json(open_=True) for s in open_.values()]
    return sorted(done, key=lambda s: (s["site"], s["table"], s["start"], s["position"]))


async def sessions(
    db: Backend,
    *,
    site: str | None = None,
    table: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    end_after: int = END_AFTER_EMPTY,
) -> list[Json]:
    """The seat sessions of rounds ended in [start, end), for ``GET /api/sessions``."""
    found = await stored_rounds(db, site=site, table=table, start=start, end=end)
    return seat_sessions(found, end_after)
