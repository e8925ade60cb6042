"""What every recorder test ends with: every published message stored once, no gaps,
acks in step."""

from __future__ import annotations

from bench.light_table import LightTable
from table_controller.recorder import queries
from table_controller.recorder.store.backend import Backend


async def stored_feed(db: Backend, table: LightTable) -> dict[int, str]:
    rows = await db.fetch(
        "SELECT feed_seq, id FROM messages WHERE site = ? AND table_id = ? AND epoch = ?",
        (table.site, table.table, table.epoch),
    )
    return {int(seq): id for seq, id in rows}


async def assert_complete(db: Backend, *tables: LightTable) -> None:
    for table in tables:
        stored = await stored_feed(db, table)
        assert stored == table.ids, f"{table.table} epoch {table.epoch}: stored != published"
        assert table.acked == table.last_feed_seq
    total = sum(len(t.ids) for t in tables)
    ids = {id for t in tables for id in t.ids.values()}
    assert len(ids) == total  # every message stored once: ids are unique and all present
    # Only these tables: the session's broker keeps other tests' retained status.
    ours = {(t.table, t.epoch) for t in tables}
    pending = [
        g for g in await queries.gaps(db) if g["pending"] and (g["table"], g["epoch"]) in ours
    ]
    assert pending == [], pending
