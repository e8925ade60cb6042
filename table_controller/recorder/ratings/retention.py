"""Retention of the hand records (``docs/recorder.md``): kept ``retention_years`` (default 5).

``records purge`` removes messages, rounds and alerts older than the
retention, never younger ones, and keeps the chain findings for ever. Hand
records are append-only to the recorder: in PostgreSQL the purge runs as a
role that holds DELETE on them (the database's administrator, not the
recorder's role); SQLite has no roles, so the purge lifts its triggers inside
its own transaction. For each chain it cuts, it keeps the newest removed
record's ``round_id`` and ``hash`` (``purged_chains``), so that the first kept
record still verifies its link.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Final

import asyncpg

from table_controller.feed.payloads import rfc3339
from table_controller.recorder.errors import RecorderConfigError, RecorderError
from table_controller.recorder.store.backend import Backend, Tx
from table_controller.recorder.store.schema import HAND_RECORDS, append_only_trigger

Json = dict[str, Any]
DAYS_PER_YEAR: Final = 365.25
PURGED: Final = (("messages", "ts"), ("rounds", "ended"), ("alerts", "ts"))


class PurgeRefused(RecorderError):
    """The database refused the purge: run it as a role that holds DELETE on the records."""


def cutoff(now: datetime, years: int) -> datetime:
    return now - timedelta(days=years * DAYS_PER_YEAR)


async def _anchor(tx: Tx, before: str) -> None:
    """Keep, per chain, the newest record about to be removed."""
    rows = await tx.fetch(
        "SELECT site, table_id, epoch, round_id, record FROM rounds WHERE ended < ?"
        " ORDER BY site, table_id, epoch, round_id",
        (before,),
    )
    newest: dict[tuple[str, str, str], tuple[int, str | None]] = {}
    for s, t, e, r, record in rows:
        newest[(s, t, e or "")] = (int(r), json.loads(record).get("hash"))
    await tx.executemany(
        "INSERT INTO purged_chains (site, table_id, epoch, round_id, hash, cutoff)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site, table_id, epoch) DO UPDATE SET"
        " round_id = excluded.round_id, hash = excluded.hash, cutoff = excluded.cutoff",
        [(*key, r, h, before) for key, (r, h) in newest.items()],
    )


async def purge(db: Backend, *, now: datetime, years: int) -> Json:
    """Remove the hand records older than ``years``; what was removed, per table."""
    if years < 1:
        raise RecorderConfigError(f"retention_years: {years}: keep at least 1 year")
    before = rfc3339(cutoff(now, years))
    sqlite = not db.url.startswith(("postgresql://", "postgres://"))
    counts: Json = {}
    try:
        async with db.transaction(exclusive=True) as tx:
            await _anchor(tx, before)
            if sqlite:
                for table in HAND_RECORDS:
                    await tx.execute(f"DROP TRIGGER {table}_no_delete")
            for table, column in PURGED:
                rows = await tx.fetch(f"SELECT COUNT(*) FROM {table} WHERE {column} < ?", (before,))
                counts[table] = int(rows[0][0])
                await tx.execute(f"DELETE FROM {table} WHERE {column} < ?", (before,))
            if sqlite:
                for table in HAND_RECORDS:
                    await tx.execute(append_only_trigger(table, "DELETE"))
    except asyncpg.InsufficientPrivilegeError as exc:
        raise PurgeRefused(
            f"{exc}: the recorder's role may not delete hand records; run records purge "
            "with --database of the administrator's role"
        ) from exc
    return {"cutoff": before, "retention_years": years, "removed": counts}


async def anchors(db: Backend) -> dict[tuple[str, str, str], Json]:
    """Per chain cut by a purge: the removed record its first kept record links to."""
    return {
        (s, t, e): {"round_id": int(r), "hash": h}
        for s, t, e, r, h in await db.fetch(
            "SELECT site, table_id, epoch, round_id, hash FROM purged_chains"
        )
    }
