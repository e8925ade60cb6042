"""The shift report (``docs/recorder.md``): per table and in total, over rounds ended in a window.

handle: cents wagered (every wager in action); win: the house's, minus the
players' net; hold: win / handle (null without handle); rounds per hour over
the window's span, or the span of the table's rounds when no window is given.
Void rounds count as voids, not as rounds dealt.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from table_controller.recorder.queries import Json, window
from table_controller.recorder.ratings.chain import CHAIN_BREAK, findings
from table_controller.recorder.ratings.hold import holds
from table_controller.recorder.ratings.pace import pace
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.times import bound_text, parse_time


async def report(
    db: Backend,
    *,
    site: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Json:
    where, params = window("ended", site, start, end)
    rows = await db.fetch(
        "SELECT site, table_id, COUNT(*), SUM(CASE WHEN void = 0 THEN 1 ELSE 0 END),"
        " SUM(void), SUM(handle), SUM(net), SUM(ties), SUM(wars), SUM(surrenders),"
        # The span of the rounds dealt, as pace measures it: a misdeal before an idle hour
        # is no hour of dealing.
        " MIN(CASE WHEN void = 0 THEN COALESCE(started, ended) END),"
        " MAX(CASE WHEN void = 0 THEN ended END) FROM rounds" + where + " GROUP BY site, table_id",
        params,
    )
    awhere, aparams = window("ts", site, start, end)
    codes: dict[tuple[str, str], Counter[str]] = {}
    # Alerts, not messages: a JOURNAL_FAULT is raised once from memory and once more as
    # journaled (docs/feed.md), both under its one ``alert`` id.
    for s, t, code, n in await db.fetch(
        "SELECT site, table_id, code, COUNT(DISTINCT alert) FROM alerts"
        + awhere
        + (" AND" if awhere else " WHERE")
        + " resolved_by IS NULL GROUP BY site, table_id, code",
        aparams,
    ):
        codes.setdefault((s, t), Counter())[code] += int(n)
    tables = []
    for s, t, _all, dealt, voids, handle, net, ties, wars, surr, first, last in rows:
        tables.append(
            _figures(
                {"site": s, "table": t},
                rounds=int(dealt or 0),
                voids=int(voids or 0),
                handle=int(handle or 0),
                players_net=int(net or 0),
                ties=int(ties or 0),
                wars=int(wars or 0),
                surrenders=int(surr or 0),
                hours=_hours(start, end, first, last),
                alerts=codes.pop((s, t), Counter()),
            )
        )
    for (s, t), counter in sorted(codes.items()):  # tables with alerts and no rounds
        tables.append(_figures({"site": s, "table": t}, alerts=counter, hours=None))
    tables.sort(key=lambda r: (r["site"], r["table"]))
    # docs/recorder.md, "Ratings, pace and hold": theo and its interval beside the hold, and
    # each table's pace under its latest dealer of the window.
    held = await holds(db, site=site, start=start, end=end)
    paced = await pace(db, site=site, start=start, end=end)
    latest = {(d["site"], d["table"]): d for d in paced["dealer_sessions"]}
    # A break in a table's hash chain is permanent: it flags every report of the table.
    broken = {(f["site"], f["table"]) for f in await findings(db, site=site)}
    for row in tables:
        key = (row["site"], row["table"])
        # A table with alerts but no round in the window: nothing wagered, nothing expected.
        row.update(held.get(key, {"theo": 0, "theo_hold": None, "interval": None, "flags": []}))
        row["flags"] = [*row["flags"], *([CHAIN_BREAK] if key in broken else [])]
        row["dealer_pace"] = latest.get(key)
    total = _total(tables, start, end)
    total["theo"] = sum(t.get("theo") or 0 for t in tables)
    total["theo_hold"] = None if not total["handle"] else total["theo"] / total["handle"]
    total["flags"] = sorted({f for t in tables for f in t["flags"]})
    return {
        "site": site,
        "from": None if start is None else bound_text(start),
        "to": None if end is None else bound_text(end),
        "tables": tables,
        "total": total,
        "dealers": paced["dealers"],
    }


def _hours(
    start: datetime | None, end: datetime | None, first: str | None, last: str | None
) -> float | None:
    lo = start or (parse_time(first) if first else None)
    hi = end or (parse_time(last) if last else None)
    if lo is None or hi is None or hi <= lo:
        return None
    return (hi - lo).total_seconds() / 3600


def _figures(
    head: Json,
    *,
    rounds: int = 0,
    voids: int = 0,
    handle: int = 0,
    players_net: int = 0,
    ties: int = 0,
    wars: int = 0,
    surrenders: int = 0,
    hours: float | None,
    alerts: Counter[str],
) -> Json:
    win = -players_net
    return head | {
        "rounds": rounds,
        "rounds_per_hour": None if hours is None else round(rounds / hours, 2),
        "handle": handle,
        "win": win,
        "hold": None if handle == 0 else win / handle,
        "ties": ties,
        "wars": wars,
        "surrenders": surrenders,
        "voids": voids,
        "alerts_by_code": dict(sorted(alerts.items())),
    }


def _total(tables: list[Json], start: datetime | None, end: datetime | None) -> Json:
    sums = {
        k: sum(t[k] for t in tables)
        for k in ("rounds", "handle", "ties", "wars", "surrenders", "voids")
    }
    alerts: Counter[str] = Counter()
    for t in tables:
        alerts.update(t["alerts_by_code"])
    hours = _hours(start, end, None, None)
    per_hour = [t["rounds_per_hour"] for t in tables if t["rounds_per_hour"] is not None]
    total = _figures(
        {},
        rounds=sums["rounds"],
        voids=sums["voids"],
        handle=sums["handle"],
        players_net=-sum(t["win"] for t in tables),
        ties=sums["ties"],
        wars=sums["wars"],
        surrenders=sums["surrenders"],
        hours=hours,
        alerts=alerts,
    )
    if hours is None:
        # No window: the floor's pace is the sum of the tables' own paces.
        total["rounds_per_hour"] = round(sum(per_hour), 2) if per_hour else None
    return total | {"tables": len(tables)}
