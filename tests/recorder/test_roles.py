"""In PostgreSQL the recorder's role cannot alter the hand records, not even by granting
itself the privilege back: the database's administrator owns the schema
(``table-controller records migrate --grant ROLE``) and the recorder runs as a role that
may only read and append them (docs/recorder.md)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import uuid

import asyncpg
import pytest

from bench.pg_server import USER, PostgresServer
from bench.seeder import Seat, Seeder
from table_controller.recorder.errors import RecorderConfigError
from table_controller.recorder.store.backend import migrate, open_backend
from table_controller.recorder.store.roles import owned_hand_records
from table_controller.recorder.store.schema import (
    HAND_RECORDS,
    MIGRATIONS,
    SCHEMA_VERSION,
    WORKING_TABLES,
)
from tests.recorder.conftest import ROOT

WIN = Seat(1000, "win")


async def _roles_and_database(postgres: PostgresServer) -> tuple[str, str, str]:
    """A database owned by an administrator role, and a recorder's login role: their URLs."""
    admin, recorder = (f"{r}_{uuid.uuid4().hex[:8]}" for r in ("admin", "rec"))
    name = f"db_{uuid.uuid4().hex[:8]}"
    root = await asyncpg.connect(postgres.url())
    try:
        await root.execute(f"CREATE ROLE {admin} LOGIN")
        await root.execute(f"CREATE ROLE {recorder} LOGIN")
        await root.execute(f"CREATE DATABASE {name} OWNER {admin}")
    finally:
        await root.close()
    url = postgres.url(name)
    as_admin = url.replace(f"://{USER}@", f"://{admin}@", 1)
    return as_admin, url.replace(f"://{USER}@", f"://{recorder}@", 1), recorder


async def test_an_administrator_owned_schema_holds_against_the_recorders_role(
    postgres: PostgresServer,
) -> None:
    as_admin, as_recorder, role = await _roles_and_database(postgres)
    # Before the administrator has applied it, the recorder may not make the schema.
    early = open_backend(as_recorder)
    try:
        with pytest.raises(RecorderConfigError, match="records --database URL migrate"):
            await migrate(early)
    finally:
        await early.close()
    command = [sys.executable, "-m", "table_controller.cli", "records", "--database", as_admin]
    done = await asyncio.to_thread(
        subprocess.run,
        [*command, "--json", "migrate", "--grant", role],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema_version"] == SCHEMA_VERSION
    db = open_backend(as_recorder)
    try:
        assert await migrate(db) == SCHEMA_VERSION  # current: only read
        assert await owned_hand_records(db) == []
        seeder = Seeder(db, table="owned-by-admin", sealed=True)
        await seeder.status()
        await seeder.round({1: WIN})
        conn = await asyncpg.connect(as_recorder)
        try:
            # The owner could grant itself the privileges back; the recorder's GRANT grants
            # nothing (PostgreSQL only warns), so its records stay as written.
            await conn.execute(f"GRANT UPDATE, DELETE ON {', '.join(HAND_RECORDS)} TO CURRENT_USER")
            for sql in (
                "UPDATE rounds SET net = 0",
                "DELETE FROM messages",
                "TRUNCATE alerts",
                "ALTER TABLE rounds DISABLE TRIGGER ALL",
                "DROP TABLE alerts",
            ):
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await conn.execute(sql)
            assert (await conn.fetchval("SELECT COUNT(*) FROM rounds")) == 1
        finally:
            await conn.close()
    finally:
        await db.close()


async def test_a_recorder_that_owns_its_records_is_told(postgres: PostgresServer) -> None:
    as_admin, _, _ = await _roles_and_database(postgres)
    db = open_backend(as_admin)  # the recorder running as the owner, as before
    try:
        await migrate(db)
        assert await owned_hand_records(db) == sorted(HAND_RECORDS)
    finally:
        await db.close()


def test_every_table_is_a_hand_record_or_a_working_table() -> None:
    """A new table must say which it is, or the recorder's role would get no grant on it."""
    created = {
        match.group(1)
        for _, statements in MIGRATIONS
        for statement in statements
        if (match := re.search(r"CREATE TABLE (\w+)", statement))
    }
    assert created == set(HAND_RECORDS) | set(WORKING_TABLES)
    assert not set(HAND_RECORDS) & set(WORKING_TABLES)
