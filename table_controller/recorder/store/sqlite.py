"""SQLite, the embedded default (``sqlite:///path``), through aiosqlite's worker thread.

WAL journal, so that ``table-controller records`` and the API read while the
recorder writes; ``synchronous=FULL``, because an ``ack`` follows the commit
and a table prunes on it: a commit must survive a power cut.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import aiosqlite

from table_controller.recorder.errors import DatabaseUnavailable
from table_controller.recorder.store.backend import Row

BUSY_TIMEOUT_S: Final = 30.0


class _SqliteTx:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self._conn.execute(sql, tuple(params))

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            await self._conn.executemany(sql, [tuple(r) for r in rows])

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        async with self._conn.execute(sql, tuple(params)) as cur:
            return [tuple(r) for r in await cur.fetchall()]


class SqliteBackend:
    def __init__(self, url: str) -> None:
        self.url = url
        # ``sqlite:///var/lib/recorder.db``: everything after ``sqlite://`` is the path.
        self.path = Path(url.removeprefix("sqlite://"))
        self._conn: aiosqlite.Connection | None = None
        # One connection: the writer, the gap check and the API take turns on it.
        self._lock = asyncio.Lock()
        # Callers that find it closed at once open it once: a second connection would be
        # lost, its thread running for good.
        self._opening = asyncio.Lock()

    async def open(self) -> None:
        if self._conn is not None:
            return
        async with self._opening:
            if self._conn is None:
                await self._connect()

    async def _connect(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise DatabaseUnavailable(f"{self.url}: cannot open: {exc}") from exc
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            await conn.close()
            raise DatabaseUnavailable(f"{self.url}: cannot open: {exc}") from exc
        self._conn = conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    def _require(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise DatabaseUnavailable(f"{self.url}: not open")
        return self._conn

    @asynccontextmanager
    async def transaction(self, *, exclusive: bool = False) -> AsyncIterator[_SqliteTx]:
        await self.open()
        conn = self._require()
        async with self._lock:
            try:
                await conn.execute("BEGIN EXCLUSIVE" if exclusive else "BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise DatabaseUnavailable(f"{self.url}: {exc}") from exc
            try:
                yield _SqliteTx(conn)
            except sqlite3.OperationalError as exc:
                await conn.rollback()
                if not _for_now(exc):
                    raise
                # A full disk or a database busy elsewhere: nothing is taken, nothing acked.
                raise DatabaseUnavailable(f"{self.url}: {exc}") from exc
            except BaseException:
                await conn.rollback()
                raise
            try:
                await conn.commit()
            except sqlite3.OperationalError as exc:
                await conn.rollback()
                raise DatabaseUnavailable(f"{self.url}: commit failed: {exc}") from exc

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        await self.open()
        try:
            async with self._lock, self._require().execute(sql, tuple(params)) as cur:
                return [tuple(r) for r in await cur.fetchall()]
        except sqlite3.OperationalError as exc:
            raise DatabaseUnavailable(f"{self.url}: {exc}") from exc


# SQLite's primary result codes of a database that cannot take the commit now, but may
# later (docs/recorder.md): busy or locked elsewhere, read-only, an I/O error, full.
_FOR_NOW: Final = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
    }
)


def _for_now(exc: sqlite3.OperationalError) -> bool:
    """``exc`` says the database cannot take the commit now (retry), not that it is wrong."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _FOR_NOW
