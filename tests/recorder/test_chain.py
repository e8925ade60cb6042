"""The round records' hash chain: computed, verified on arrival, re-verified, append-only."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.pg_server import USER, PostgresServer
from bench.seeder import Seat, Seeder
from table_controller.feed.chain import breaks, record_hash, seal, verifies
from table_controller.recorder.errors import RecorderConfigError
from table_controller.recorder.ratings.chain import findings, verify_all
from table_controller.recorder.ratings.retention import PurgeRefused, purge
from table_controller.recorder.report import report
from table_controller.recorder.store.backend import Backend, migrate, open_backend
from tests.recorder.conftest import ROOT

WIN = Seat(1000, "win")
SMALL = {"schema": "war-round/1", "round_id": 7, "table": "war-07", "net": -1000, "void": False}


def test_the_hash_is_sha256_of_the_canonical_json_without_hash() -> None:
    # For text, integers and booleans RFC 8785 is sorted keys and no whitespace.
    canonical = json.dumps(SMALL | {"prev_hash": None}, sort_keys=True, separators=(",", ":"))
    sealed = seal(SMALL | {"hash": "stale"}, None)
    assert sealed["hash"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert sealed["prev_hash"] is None
    assert verifies(sealed)
    assert record_hash(sealed) == sealed["hash"]


def test_numbers_are_in_their_canonical_form() -> None:
    # 10.0 and 10 are the same JSON number; -0.5 stays -0.5 (ECMAScript form).
    a = seal(SMALL | {"net_per_unit": 10.0, "half": -0.5}, None)
    b = seal(SMALL | {"net_per_unit": 10, "half": -0.5}, None)
    assert a["hash"] == b["hash"]


_VALUES = st.one_of(st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=8), st.booleans())


@given(st.dictionaries(st.text(min_size=1, max_size=6), _VALUES, max_size=6), st.data())
def test_any_change_of_a_member_breaks_the_hash(extra: dict[str, Any], data: st.DataObject) -> None:
    record = seal(SMALL | extra, "a" * 64)
    assert verifies(record)
    key = data.draw(st.sampled_from(sorted(k for k in record if k != "hash")))
    changed = record | {key: [record[key]]}
    assert not verifies(changed)


def test_a_chain_finds_an_altered_and_a_dropped_record() -> None:
    chain, prev = [], None
    for n in range(1, 6):
        record = seal(SMALL | {"round_id": n}, prev)
        prev = record["hash"]
        chain.append(record)
    assert breaks(chain) == []
    altered = [*chain[:2], chain[2] | {"net": 0}, *chain[3:]]
    assert [(b.round_id, b.kind) for b in breaks(altered)] == [(3, "hash")]
    dropped = [*chain[:2], *chain[3:]]
    assert [(b.round_id, b.kind) for b in breaks(dropped)] == [(4, "link")]
    assert [(b.round_id, b.kind) for b in breaks(chain[1:])] == [(2, "link")]


async def _sealed_run(db: Backend, table: str, n: int = 5) -> Seeder:
    seeder = Seeder(db, table=table, sealed=True)
    for _ in range(n):
        await seeder.round({1: WIN})
    return seeder


async def test_a_sealed_chain_arrives_without_a_finding(db: Backend) -> None:
    await _sealed_run(db, "clean")
    assert await findings(db) == []
    assert (await verify_all(db, found="now"))["ok"]


async def test_a_break_on_arrival_is_a_permanent_visible_finding(db: Backend) -> None:
    seeder = await _sealed_run(db, "arrival", 2)
    forged = seeder.record({1: WIN}) | {"net": 99999}  # altered after sealing
    await seeder.store(forged)
    wrong_link = seal(seeder.record({1: WIN}), "0" * 64)
    await seeder.store(wrong_link)
    got = [(f["table"], f["round_id"], f["kind"]) for f in await findings(db)]
    assert got == [("arrival", 3, "hash"), ("arrival", 4, "link")]
    (row,) = (await report(db, site=seeder.site))["tables"]
    assert "CHAIN_BREAK" in row["flags"]


async def test_a_link_is_checked_when_the_record_before_arrives_late(db: Backend) -> None:
    seeder = Seeder(db, table="late", sealed=True)
    first = seeder.record({1: WIN})
    seeder.prev_hash = "f" * 64  # the second record names a predecessor that is not the first
    second = seeder.record({1: WIN})
    await seeder.store(second)
    assert await findings(db) == []  # its predecessor is not here yet
    await seeder.store(first)
    assert [(f["round_id"], f["kind"]) for f in await findings(db)] == [(2, "link")]


def _tamper_sqlite(path: str, sql: str, params: tuple[Any, ...]) -> None:
    conn = sqlite3.connect(path)
    try:
        # SQLite has no roles: whoever holds the file can drop the triggers.
        conn.execute("DROP TRIGGER rounds_no_update")
        conn.execute("DROP TRIGGER rounds_no_delete")
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


async def _tamper(db_url: str, sql: str, *params: Any) -> None:
    """What a person with the database's keys could do behind the recorder's back."""
    if db_url.startswith("sqlite"):
        _tamper_sqlite(db_url.removeprefix("sqlite://"), sql, params)
        return
    conn = await asyncpg.connect(db_url)  # the server's superuser ignores privileges
    try:
        counter = iter(range(1, 10))
        await conn.execute("".join(f"${next(counter)}" if c == "?" else c for c in sql), *params)
    finally:
        await conn.close()


def _verify(db_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "table_controller.cli",
            "records",
            "--database",
            db_url,
            "--json",
            "verify",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_records_verify_finds_an_altered_record(db_url: str, db: Backend) -> None:
    seeder = await _sealed_run(db, "altered")
    assert _verify(db_url).returncode == 0
    record = seeder.records[2] | {"net": 123456}
    await _tamper(
        db_url, "UPDATE rounds SET record = ? WHERE id = ?", json.dumps(record), record["id"]
    )
    done = _verify(db_url)
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)
    assert [(b["round_id"], b["kind"]) for b in found["breaks"]] == [(3, "hash")]
    assert "altered or dropped" in done.stderr
    assert [(f["round_id"], f["kind"]) for f in await findings(db)] == [(3, "hash")]


async def test_records_verify_finds_a_dropped_record(db_url: str, db: Backend) -> None:
    seeder = await _sealed_run(db, "dropped")
    await _tamper(db_url, "DELETE FROM rounds WHERE id = ?", seeder.records[1]["id"])
    done = _verify(db_url)
    assert done.returncode == 1
    assert [(b["round_id"], b["kind"]) for b in json.loads(done.stdout)["breaks"]] == [(3, "link")]


async def test_sqlite_refuses_to_alter_a_hand_record(tmp_path: Any) -> None:
    db = open_backend(f"sqlite://{tmp_path}/r.db")
    await migrate(db)
    seeder = await _sealed_run(db, "sqlite")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        async with db.transaction() as tx:
            await tx.execute("UPDATE rounds SET net = 0 WHERE id = ?", (seeder.records[0]["id"],))
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        async with db.transaction() as tx:
            await tx.execute("DELETE FROM messages")
    await db.close()


async def _own_role_database(postgres: PostgresServer) -> str:
    """A database owned by a role of its own, no superuser: as a recorder is deployed."""
    role, name = f"rec_{uuid.uuid4().hex[:8]}", f"db_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(postgres.url())
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN")
        await admin.execute(f"CREATE DATABASE {name} OWNER {role}")
    finally:
        await admin.close()
    url = postgres.url(name).replace(f"://{USER}@", f"://{role}@", 1)
    assert f"://{role}@" in url
    return url


async def test_the_recorders_role_cannot_update_or_delete_a_hand_record(
    postgres: PostgresServer,
) -> None:
    url = await _own_role_database(postgres)
    db = open_backend(url)
    await migrate(db)  # as the recorder's own role, which owns its tables
    seeder = await _sealed_run(db, "role", 2)
    conn = await asyncpg.connect(url)
    try:
        for sql in (
            "UPDATE rounds SET net = 0",
            "UPDATE messages SET payload = '{}'",
            "DELETE FROM rounds",
            "DELETE FROM chain_findings",
            "TRUNCATE alerts",
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(sql)
        # It still writes what it must: new records, and the summaries it keeps current.
        await conn.execute("UPDATE tables SET last_seen = last_seen")
    finally:
        await conn.close()
    await seeder.round({1: WIN})
    assert len(await db.fetch("SELECT id FROM rounds")) == 3
    await db.close()


async def test_a_purge_removes_only_what_is_past_the_retention(db: Backend) -> None:
    now = datetime(2032, 6, 1, tzinfo=UTC)
    seeder = Seeder(db, table="kept", sealed=True, start=now - timedelta(days=6 * 366))
    for _ in range(3):
        await seeder.round({1: WIN})
    seeder.at = now - timedelta(days=30)
    for _ in range(2):
        await seeder.round({1: WIN})
    done = await purge(db, now=now, years=5)
    assert done["removed"]["rounds"] == 3
    kept = await db.fetch("SELECT round_id FROM rounds ORDER BY round_id")
    assert [int(r[0]) for r in kept] == [4, 5]
    # The first kept record links to the newest removed one: the chain still verifies.
    assert (await verify_all(db, found="now"))["ok"]
    with pytest.raises(RecorderConfigError, match="retention_years"):
        await purge(db, now=now, years=0)


async def test_the_recorders_role_may_not_purge(postgres: PostgresServer) -> None:
    db = open_backend(await _own_role_database(postgres))
    await migrate(db)
    await _sealed_run(db, "purge", 1)
    with pytest.raises(PurgeRefused, match="administrator"):
        await purge(db, now=datetime(2040, 1, 1, tzinfo=UTC), years=1)
    await db.close()
