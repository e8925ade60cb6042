"""A backend that many callers find closed at once opens once: no second connection (or
pool) is made and then lost, to hold a server connection or a thread for good."""

from __future__ import annotations

import asyncio
import threading

from table_controller.recorder.store.backend import Backend, is_postgres, open_backend

CALLERS = 6
THREAD_END_S = 10.0


async def _server_connections(db: Backend, url: str) -> int:
    """How many connections PostgreSQL holds to ``url``'s database, but the one asking."""
    (row,) = await db.fetch(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()",
        (url.rsplit("/", 1)[1].split("?", 1)[0],),
    )
    return int(row[0])


async def test_callers_that_find_a_backend_closed_at_once_open_it_once(
    db: Backend, db_url: str
) -> None:
    threads_before = set(threading.enumerate())
    fresh = open_backend(db_url)
    try:
        found = await asyncio.gather(*(fresh.fetch("SELECT 1") for _ in range(CALLERS)))
        assert found == [[(1,)]] * CALLERS
    finally:
        await fresh.close()
    # Closed: nothing it opened is left, neither a thread nor a server connection.
    for thread in set(threading.enumerate()) - threads_before:
        thread.join(timeout=THREAD_END_S)
    assert [t.name for t in set(threading.enumerate()) - threads_before if t.is_alive()] == []
    if is_postgres(db):
        assert await _server_connections(db, db_url) == 0
