"""Game pace (``docs/recorder.md``): rounds per hour per table and per dealer.

A dealer's session runs from one ``dealer_changed`` of the table to the next
(or to the window's end, or without one, to the table's last stored round).
A round belongs to the dealer whose session holds its ``started`` time; rounds
before a table's first ``dealer_changed`` are nobody's. A window counts the
rounds ended inside it (as the report does) and the hours of each session
inside it. Void rounds were
never dealt and do not count. Rounds per hour over a dealer's sessions is the
rounds they dealt over the hours they were at a table.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from table_controller.feed.payloads import rfc3339
from table_controller.recorder.queries import window
from table_controller.recorder.ratings.buckets import summaries
from table_controller.recorder.storable import TEXT_PROBLEM, read_json
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.schema import DEALER_CHANGES
from table_controller.recorder.times import bound_text, parse_time

Json = dict[str, Any]


@dataclass(slots=True)
class _DealerSession:
    site: str
    table: str
    dealer: str
    start: datetime  # the dealer_changed, or the window's start if later
    end: datetime | None
    since: datetime  # the dealer_changed itself: a round started after it is this dealer's
    rounds: int = 0


# Only an event that counts as one (``FeedMessage.usable``): not one published on another
# table's topic, nor one kept although its envelope or body did not parse.
_CHANGES: Final = (
    "SELECT ts, payload FROM messages WHERE site = ? AND table_id = ? AND "
    + DEALER_CHANGES
    + " AND (problem IS NULL OR problem = ?)"
)
_BEFORE: Final = 20  # read back at a time for the change in force at the window's start


def _change(ts: str, payload: str) -> tuple[datetime, str] | None:
    body = read_json(payload)
    if body.get("type") == "dealer_changed" and isinstance(body.get("dealer"), str):
        return parse_time(ts), body["dealer"]
    return None  # "dealer_changed" in another field's text


async def dealer_changes(
    db: Backend, *, site: str | None, start: datetime | None, end: datetime | None
) -> dict[tuple[str, str], list[tuple[datetime, str]]]:
    """Every table's ``dealer_changed`` events in [start, end), and the one in force at
    ``start`` (the newest before it), oldest first. Per table, on the partial index."""
    where, params = window("ts", None, start, end)
    inside = _CHANGES + where.replace(" WHERE ", " AND ") + " ORDER BY ts, feed_seq"
    earlier = _CHANGES + " AND ts < ? ORDER BY ts DESC, feed_seq DESC LIMIT ? OFFSET ?"
    found: dict[tuple[str, str], list[tuple[datetime, str]]] = {}
    for s, t in await db.fetch(
        "SELECT site, table_id FROM tables" + (" WHERE site = ?" if site else ""),
        [site] if site else [],
    ):
        rows = await db.fetch(inside, [s, t, TEXT_PROBLEM, *params])
        changes = [c for ts, p in rows if (c := _change(ts, p))]
        offset = 0
        while start is not None:
            rows = await db.fetch(earlier, [s, t, TEXT_PROBLEM, bound_text(start), _BEFORE, offset])
            first = next((c for ts, p in rows if (c := _change(ts, p))), None)
            if first is not None:
                changes.insert(0, first)
            if first is not None or len(rows) < _BEFORE:
                break
            offset += _BEFORE
        if changes:
            found[(s, t)] = changes
    return found


def _hours(lo: datetime, hi: datetime | None) -> float:
    return 0.0 if hi is None or hi <= lo else (hi - lo).total_seconds() / 3600


def _per_hour(rounds: int, hours: float) -> float | None:
    return None if hours <= 0 else round(rounds / hours, 2)


async def pace(
    db: Backend,
    *,
    site: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Json:
    """``GET /api/pace``: per table, per dealer session and per dealer, in [start, end)."""
    found = await summaries(db, site=site, start=start, end=end)
    changes = await dealer_changes(db, site=site, start=start, end=end)
    by_table = {key: s.started for key, s in found.items() if s.started}
    last_ended = {key: s.last_ended for key, s in found.items() if s.last_ended is not None}
    sessions: list[_DealerSession] = []
    for (s, t), events in sorted(changes.items()):
        played = sorted(by_table.get((s, t), []))
        last = last_ended.get((s, t))
        table_sessions = []
        for i, (at, dealer) in enumerate(events):
            following = events[i + 1][0] if i + 1 < len(events) else (end or last)
            lo = max(at, start) if start else at
            if following is not None and following <= lo:
                continue  # over before the window opened
            table_sessions.append(_DealerSession(s, t, dealer, lo, following, at))
        starts = [d.since for d in table_sessions]
        for at in played:
            i = bisect_right(starts, at) - 1
            holder = table_sessions[i] if i >= 0 else None
            if holder is not None and (holder.end is None or at < holder.end):
                holder.rounds += 1
        sessions += table_sessions
    tables = []
    for (s, t), played in sorted(by_table.items()):
        # Without a window, the table's own span: its first round's start to its last
        # round's end (as the report measures it), so N rounds are N rounds' time.
        lo, hi = start or min(played), end or last_ended[(s, t)]
        hours = _hours(lo, hi)
        tables.append(
            {"site": s, "table": t, "rounds": len(played), "hours": round(hours, 4)}
            | {"rounds_per_hour": _per_hour(len(played), hours)}
        )
    dealers: dict[tuple[str, str], Json] = {}
    for d in sessions:
        entry = dealers.setdefault(
            (d.site, d.dealer),
            {"site": d.site, "dealer": d.dealer, "sessions": 0, "rounds": 0, "hours": 0.0},
        )
        entry["sessions"] += 1
        entry["rounds"] += d.rounds
        entry["hours"] += _hours(d.start, d.end)
    for entry in dealers.values():
        entry["rounds_per_hour"] = _per_hour(entry["rounds"], entry["hours"])
        entry["hours"] = round(entry["hours"], 4)
    return {
        "site": site,
        "from": None if start is None else bound_text(start),
        "to": None if end is None else bound_text(end),
        "tables": tables,
        "dealers": [dealers[k] for k in sorted(dealers)],
        "dealer_sessions": [
            {
                "site": d.site,
                "table": d.table,
                "dealer": d.dealer,
                "start": rfc3339(d.start),
                "end": None if d.end is None else rfc3339(d.end),
                "rounds": d.rounds,
                "rounds_per_hour": _per_hour(d.rounds, _hours(d.start, d.end)),
            }
            for d in sessions
        ],
    }
