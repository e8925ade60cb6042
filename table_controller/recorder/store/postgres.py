"""PostgreSQL (``postgresql://…``), production's database, through asyncpg.

One small pool: the writer takes a connection per commit, the API one per
query. A server that is away (stopped, restarting, refusing connections)
raises :class:`DatabaseUnavailable` and the caller retries with backoff;
asyncpg's pool replaces a connection that the server closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

import asyncpg

from table_controller.recorder.errors import DatabaseUnavailable
from table_controller.recorder.store.backend import Row

CONNECT_TIMEOUT_S: Final = 5.0
COMMAND_TIMEOUT_S: Final = 30.0
POOL_MAX: Final = 4
_LOCK_KEY: Final = 0x7265636F72646572  # "recorder": serialises migrations across recorders
_MARK: Final = re.compile(r"\?")

# Errors that mean "the server is away", not "the SQL is wrong": retry these.
_AWAY: Final = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.exceptions.OperatorInterventionError,
    # A connection broken mid-command leaves asyncpg's protocol in this state.
    asyncpg.exceptions.InternalClientError,
)
# Errors of a server that is up but cannot take the commit now: no connection slot, a full
# disk or no memory (class 53); a standby that took over and is still read-only; a
# transaction it rolled back to break a deadlock or a serialization conflict. The same
# transaction may succeed later, on the same connection.
_NOT_NOW: Final = (
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.exceptions.ReadOnlySQLTransactionError,
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.SerializationError,
)


def numbered(sql: str) -> str:
    """``?`` placeholders as asyncpg's ``$1, $2, …`` (our SQL has no literal ``?``)."""
    counter = iter(range(1, 10_000))
    return _MARK.sub(lambda _: f"${next(counter)}", sql)


class _PgTx:
    def __init__(self, conn: asyncpg.Connection | asyncpg.pool.PoolConnectionProxy) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self._conn.execute(numbered(sql), *params)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            await self._conn.executemany(numbered(sql), [tuple(r) for r in rows])

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return [tuple(r) for r in await self._conn.fetch(numbered(sql), *params)]


class PostgresBackend:
    def __init__(self, url: str) -> None:
        self.url = url
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()

    async def open(self) -> None:
        if self._pool is not None:
            return
        # Callers that find it closed at once open one pool: a second would be lost, and
        # its connections held on the server for good.
        async with self._opening:
            if self._pool is not None:
                return
            try:
                self._pool = await asyncpg.create_pool(
                    self.url,
                    min_size=1,
                    max_size=POOL_MAX,
                    timeout=CONNECT_TIMEOUT_S,
                    command_timeout=COMMAND_TIMEOUT_S,
                )
            except (*_AWAY, *_NOT_NOW) as exc:
                raise DatabaseUnavailable(f"{_safe(self.url)}: cannot connect: {exc}") from exc

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    await pool.close()
            except (TimeoutError, *_AWAY):
                pool.terminate()

    @contextlib.asynccontextmanager
    async def transaction(self, *, exclusive: bool = False) -> AsyncIterator[_PgTx]:
        pool = await self._open_pool()
        try:
            async with pool.acquire() as conn:
                try:
                    async with conn.transaction():
                        if exclusive:
                            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
                        yield _PgTx(conn)
                except _AWAY:
                    # A connection broken mid-command may be left unusable: drop it, so
                    # that the pool opens a new one instead of handing it out again. One
                    # the pool has taken back already cannot be dropped, and need not be:
                    # what is raised is why the server was away, not that.
                    with contextlib.suppress(asyncpg.InterfaceError):
                        conn.terminate()
                    raise
        except _AWAY as exc:
            raise DatabaseUnavailable(f"{_safe(self.url)}: {_first(exc)}") from exc
        except _NOT_NOW as exc:
            raise DatabaseUnavailable(f"{_safe(self.url)}: not now: {exc}") from exc

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        async with self.transaction() as tx:
            return await tx.fetch(sql, params)

    async def _open_pool(self) -> asyncpg.Pool:
        await self.open()
        assert self._pool is not None
        return self._pool


def _first(exc: BaseException) -> BaseException:
    """What broke the connection. Unwinding a transaction on it raises again, that the
    connection is closed, over the server's own reason (a shutdown, say)."""
    while isinstance(exc, asyncpg.InterfaceError) and isinstance(exc.__context__, _AWAY):
        exc = exc.__context__
    return exc


def _safe(url: str) -> str:
    """The URL without a password, for messages and logs."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)
