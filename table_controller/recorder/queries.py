"""What the database answers (``docs/recorder.md``), for the JSON API and ``records`` alike.

Each query returns plain JSON-ready values: amounts in integer cents, times
RFC 3339 UTC. An unknown table raises :class:`UnknownTable`.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Final

from table_controller.feed.common import BURN_ROLES
from table_controller.recorder.errors import UnknownTable
from table_controller.recorder.storable import read_json
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.times import bound_text

Json = dict[str, Any]
CRITICAL: Final = "critical"
JOURNAL_FAULT: Final = "JOURNAL_FAULT"


def window(
    column: str, site: str | None, start: datetime | None, end: datetime | None
) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if site is not None:
        clauses.append("site = ?")
        params.append(site)
    if start is not None:
        clauses.append(f"{column} >= ?")
        params.append(bound_text(start))
    if end is not None:
        clauses.append(f"{column} < ?")
        params.append(bound_text(end))
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


async def known(db: Backend, site: str, table: str) -> None:
    rows = await db.fetch("SELECT 1 FROM tables WHERE site = ? AND table_id = ?", (site, table))
    if not rows:
        raise UnknownTable(f"no table {table!r} at site {site!r}")


async def tables(db: Backend) -> list[Json]:
    """Every table: latest ``status``, ``state``, ``stats``, last seen, open critical alerts."""
    latest: dict[tuple[str, str], Json] = {}
    for site, table, topic, payload in await db.fetch(
        "SELECT site, table_id, topic, payload FROM latest"
    ):
        latest.setdefault((site, table), {})[topic] = read_json(payload)
    critical = Counter(
        (a["site"], a["table"])
        for a in await alerts(db, open_only=True)
        if a["severity"] == CRITICAL
    )
    out = []
    for site, table, first, last in await db.fetch(
        "SELECT site, table_id, first_seen, last_seen FROM tables ORDER BY site, table_id"
    ):
        known = latest.get((site, table), {})
        out.append(
            {
                "site": site,
                "table": table,
                "first_seen": first,
                "last_seen": last,
                "status": known.get("status"),
                "state": known.get("state"),
                "stats": known.get("stats"),
                "open_critical_alerts": critical[(site, table)],
            }
        )
    return out


async def rounds(
    db: Backend,
    site: str,
    table: str,
    *,
    last: int | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[Json]:
    """``war-round/1`` records, newest first: the last ``last``, or those ended in [start, end)."""
    await known(db, site, table)
    sql = "SELECT record FROM rounds WHERE site = ? AND table_id = ?"
    where, bounds = window("ended", None, start, end)
    sql += where.replace(" WHERE ", " AND ") + " ORDER BY ended DESC, round_id DESC"
    params: list[Any] = [site, table, *bounds]
    if last is not None:
        sql += " LIMIT ?"
        params.append(last)
    return [read_json(r[0]) for r in await db.fetch(sql, params)]


async def one_round(db: Backend, site: str, table: str, epoch: str, round_id: int) -> Json | None:
    """One record with its reconstruction (§(i)(4)), or None."""
    await known(db, site, table)
    rows = await db.fetch(
        "SELECT record FROM rounds WHERE site = ? AND table_id = ? AND epoch = ? AND round_id = ?",
        (site, table, epoch, round_id),
    )
    if not rows:
        return None
    record = read_json(rows[0][0])
    return {"record": record, "reconstruction": reconstruction(record)}


def reconstruction(record: Json) -> Json:
    """Every card in dealing order with its role and position; a burn card without its rank
    (§(h)(1)); and each position's hand as it was settled."""
    cards = [
        {
            "n": c["n"],
            "role": c["role"],
            "position": c["position"],
            "card": None if c["role"] in BURN_ROLES else c["card"],
            "source": c["source"],
        }
        for c in sorted(record.get("cards", []), key=lambda c: c["n"])
    ]
    hands = [
        {
            "position": p["position"],
            "card": p["card"],
            "dealer_card": record.get("dealer_card"),
            "outcome": p["outcome"],
            "decision": p["decision"],
            "war_card": p["war_card"],
            "dealer_war_card": record.get("dealer_war_card") if p["decision"] == "war" else None,
            "war_outcome": p["war_outcome"],
            "wagers": p["wagers"],
            "net": p["net"],
        }
        for p in record.get("positions", [])
    ]
    return {"cards": cards, "burns": sum(c["role"] in BURN_ROLES for c in cards), "hands": hands}


async def alerts(db: Backend, *, open_only: bool = False, site: str | None = None) -> list[Json]:
    """Alerts with raise and resolve times (one row per alert, from its messages)."""
    sql = (
        "SELECT site, table_id, alert, code, severity, message, round_id, position, spot,"
        " resolved_by, ts FROM alerts"
    )
    params: list[Any] = []
    if site is not None:
        sql += " WHERE site = ?"
        params.append(site)
    by_alert: dict[tuple[str, str, str], Json] = {}
    for s, t, alert, code, sev, msg, rnd, pos, spot, resolved_by, ts in await db.fetch(
        sql + " ORDER BY ts", params
    ):
        entry = by_alert.setdefault(
            (s, t, alert),
            {
                "site": s,
                "table": t,
                "alert": alert,
                "code": code,
                "severity": sev,
                "message": msg,
                "round_id": rnd,
                "position": pos,
                "spot": spot,
                "raised": None,
                "resolved": None,
                "resolved_by": None,
            },
        )
        if resolved_by is None:
            entry["raised"] = entry["raised"] or ts
        else:
            entry["resolved"], entry["resolved_by"] = ts, resolved_by
    out = list(by_alert.values())
    if open_only:
        out = [a for a in out if a["resolved"] is None]
        over = await _faults_over(db, [a for a in out if a["code"] == JOURNAL_FAULT])
        out = [a for a in out if (a["site"], a["table"], a["alert"]) not in over]
    return sorted(out, key=lambda a: (a["raised"] or a["resolved"] or "", a["alert"]))


async def _faults_over(db: Backend, faults: list[Json]) -> set[tuple[str, str, str]]:
    """Of the unresolved ``JOURNAL_FAULT`` alerts, those whose table's newest status,
    sent after them, says its journal commits (docs/decisions/recorder.md): a table whose
    power was cut during a fault never sends the resolution of what it sent from memory."""
    if not faults:
        return set()
    statuses: dict[tuple[str, str], tuple[str, Any]] = {}
    for site, table, ts, payload in await db.fetch(
        "SELECT site, table_id, ts, payload FROM latest WHERE topic = 'status'"
    ):
        statuses[(site, table)] = (ts, read_json(payload))
    over = set()
    for a in faults:
        ts, status = statuses.get((a["site"], a["table"]), ("", None))
        journal = status.get("journal") if isinstance(status, dict) else None
        state = journal.get("state") if isinstance(journal, dict) else None
        if state == "ok" and a["raised"] is not None and ts > a["raised"]:
            over.add((a["site"], a["table"], a["alert"]))
    return over


async def gaps(db: Backend) -> list[Json]:
    """Per table and epoch: pending and permanent feed gaps, and the committed progress."""
    progress = {
        (s, t, e): (int(c), int(a))
        for s, t, e, c, a in await db.fetch(
            "SELECT site, table_id, epoch, contiguous, announced FROM feed_progress"
        )
    }
    found: dict[tuple[str, str, str], Json] = {}
    for key, (contiguous, announced) in progress.items():
        found[key] = _gap_entry(key, contiguous, announced)
    for s, t, e, first, last, state, since in await db.fetch(
        "SELECT site, table_id, epoch, first_seq, last_seq, state, since FROM feed_gaps"
        " ORDER BY first_seq"
    ):
        entry = found.setdefault((s, t, e), _gap_entry((s, t, e), 0, 0))
        entry[state].append({"from_feed_seq": int(first), "to_feed_seq": int(last), "since": since})
    return [found[k] for k in sorted(found)]


def _gap_entry(key: tuple[str, str, str], contiguous: int, announced: int) -> Json:
    site, table, epoch = key
    return {
        "site": site,
        "table": table,
        "epoch": epoch,
        "contiguous_feed_seq": contiguous,
        "announced_feed_seq": announced,
        "pending": [],
        "permanent": [],
    }
