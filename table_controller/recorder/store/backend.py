"""The seam between the writer and queries and a database: a transaction of three calls.

SQL is written once with ``?`` placeholders; the PostgreSQL backend numbers
them (``$1``). :func:`open_backend` picks the backend from the URL, and
:func:`migrate` applies the schema in either.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol

from table_controller.recorder.errors import RecorderConfigError, SchemaVersionError
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


# PostgreSQL's SQLSTATE for a statement the role may not run.
INSUFFICIENT_PRIVILEGE: Final = "42501"


def is_postgres(db: Backend) -> bool:
    return db.url.startswith(("postgresql://", "postgres://"))


async def migrate(db: Backend) -> int:
    """Apply every migration not applied yet; the schema version afterwards.

    A schema already current is only read, so that a recorder whose role may not change
    the schema (the administrator owns it, store/roles.py) starts as well."""
    # Two recorders starting at once: the second waits, then finds the schema applied.
    async with db.transaction(exclusive=True) as tx:
        version = await _version(db, tx)
        if version is not None and version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{db.url}: schema version {version} is newer than this recorder's "
                f"{SCHEMA_VERSION}: upgrade the recorder"
            )
        if version == SCHEMA_VERSION:
            return SCHEMA_VERSION
        try:
            if version is None:
                await tx.execute(VERSION_TABLE)
            for number, statements in MIGRATIONS:
                if number <= (version or 0):
                    continue
                for statement in statements:
                    if _runs_on(db, statement):
                        await tx.execute(statement)
                await tx.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
        except Exception as exc:
            if getattr(exc, "sqlstate", None) != INSUFFICIENT_PRIVILEGE:
                raise
            raise RecorderConfigError(
                f"{db.url.split('@')[-1]}: the schema is at version {version or 0}, this "
                f"recorder needs {SCHEMA_VERSION}, and its role may not change it ({exc}): "
                "have the database's administrator run "
                "table-controller records --database URL migrate --grant ROLE"
            ) from exc
    return SCHEMA_VERSION


async def _version(db: Backend, tx: Tx) -> int | None:
    """The schema's version, None before the first migration."""
    if is_postgres(db):
        exists = "SELECT to_regclass('schema_version') IS NOT NULL"
    else:
        exists = (
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        )
    if not (await tx.fetch(exists))[0][0]:
        return None
    rows = await tx.fetch("SELECT MAX(version) FROM schema_version")
    return int(rows[0][0] or 0)


def _runs_on(db: Backend, statement: str) -> bool:
    """A statement marked ``-- postgresql`` or ``-- sqlite`` runs only on that database."""
    postgres = is_postgres(db)
    if statement.startswith("-- postgresql\n"):
        return postgres
    if statement.startswith("-- sqlite\n"):
        return not postgres
    return True


async def schema_version(db: Backend) -> int:
    rows = await db.fetch("SELECT MAX(version) FROM schema_version")
    return int(rows[0][0] or 0)
