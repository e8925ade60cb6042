"""The seam between the writer and queries and a database: a transaction of three calls.

SQL is written once with ``?`` placeholders; the PostgreSQL backend numbers
them (``$1``). :func:`open_backend` picks the backend from the URL, and
:func:`migrate` applies the schema in either.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from table_controller.recorder.errors import SchemaVersionError
from table_controller.recorder.store.schema import MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE

Row = tuple[Any, ...]


class Tx(Protocol):
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...


class Backend(Protocol):
    """A database. Its calls raise ``DatabaseUnavailable`` when it is away (retry)."""

    url: str

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def transaction(self, *, exclusive: bool = False) -> AbstractAsyncContextManager[Tx]:
        """One transaction; ``exclusive`` also serialises it against other recorders."""
        ...

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...


def open_backend(url: str) -> Backend:
    """The backend for ``postgresql://…`` or ``sqlite:///path`` (not yet opened)."""
    if url.startswith(("postgresql://", "postgres://")):
        from table_controller.recorder.store.postgres import PostgresBackend

        return PostgresBackend(url)
    from table_controller.recorder.store.sqlite import SqliteBackend

    return SqliteBackend(url)


async def migrate(db: Backend) -> int:
    """Apply every migration not applied yet; the schema version afterwards."""
    # Two recorders starting at once: the second waits, then finds the schema applied.
    async with db.transaction(exclusive=True) as tx:
        await tx.execute(VERSION_TABLE)
        rows = await tx.fetch("SELECT MAX(version) FROM schema_version")
        version = rows[0][0] or 0
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{db.url}: schema version {version} is newer than this recorder's "
                f"{SCHEMA_VERSION}: upgrade the recorder"
            )
        for number, statements in MIGRATIONS:
            if number <= version:
                continue
            for statement in statements:
                if _runs_on(db, statement):
                    await tx.execute(statement)
            await tx.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
    return SCHEMA_VERSION


def _runs_on(db: Backend, statement: str) -> bool:
    """A statement marked ``-- postgresql`` or ``-- sqlite`` runs only on that database."""
    postgres = db.url.startswith(("postgresql://", "postgres://"))
    if statement.startswith("-- postgresql\n"):
        return postgres
    if statement.startswith("-- sqlite\n"):
        return not postgres
    return True


async def schema_version(db: Backend) -> int:
    rows = await db.fetch("SELECT MAX(version) FROM schema_version")
    return int(rows[0][0] or 0)
