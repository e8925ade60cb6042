"""The database on its own, SQLite and PostgreSQL alike: migrations, storing once, ``records``."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench.light_table import LightTable
from bench.pg_server import PostgresServer
from table_controller.recorder import queries
from table_controller.recorder.book import SUPERSEDED_AFTER_S, FeedBook
from table_controller.recorder.errors import DatabaseUnavailable, SchemaVersionError
from table_controller.recorder.intake import IntakeError, parse_message
from table_controller.recorder.report import report
from table_controller.recorder.sequence import GAP_WAIT_S, SeqTrack
from table_controller.recorder.store.backend import Backend, migrate, schema_version
from table_controller.recorder.store.postgres import PostgresBackend
from table_controller.recorder.store.schema import SCHEMA_VERSION
from table_controller.recorder.store.writer import Key, save_progress, store_batch
from tests.recorder.conftest import ROOT, SITE, migrated


async def _stored_table(db: Backend, rounds: int = 4) -> LightTable:
    table = LightTable("127.0.0.1", 1, site=SITE, table="t1", seed=3)
    for _ in range(rounds):
        table.deal_round()
    batch = [parse_message(topic, payload) for topic, payload in table.held.values()]
    await store_batch(db, batch, received="2026-01-01T00:00:00.000Z")
    return table


async def test_migrations_apply_once_and_a_newer_schema_is_refused(db: Backend) -> None:
    assert await migrate(db) == SCHEMA_VERSION  # the fixture migrated already: no-op
    assert await schema_version(db) == SCHEMA_VERSION
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaVersionError, match="upgrade the recorder"):
        await migrate(db)


async def test_a_message_is_stored_once_however_often_it_arrives(db: Backend) -> None:
    table = await _stored_table(db)
    batch = [parse_message(topic, payload) for topic, payload in table.held.values()]
    again = await store_batch(db, batch + batch, received="2026-01-01T00:00:01.000Z")
    assert again.new == []
    assert again.duplicates == 2 * len(batch)
    rows = await db.fetch("SELECT COUNT(*), COUNT(DISTINCT id) FROM messages")
    assert tuple(rows[0]) == (len(batch), len(batch))
    rounds = await db.fetch("SELECT COUNT(*) FROM rounds")
    assert rounds[0][0] == 4


async def test_records_command_reads_the_same_data(db_url: str, db: Backend) -> None:
    table = await _stored_table(db)
    expected = await report(db, site=SITE)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "table_controller.cli", "records", "--database", db_url]
        return subprocess.run(
            [*command, *args], capture_output=True, text=True, cwd=ROOT, timeout=60
        )

    def records(*args: str) -> str:
        done = run(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert json.loads(records("--json", "report", "--site", SITE)) == expected
    rows = list(csv.DictReader(io.StringIO(records("--csv", "rounds", SITE, "t1", "--last", "2"))))
    assert [int(r["round_id"]) for r in rows] == [4, 3]
    assert json.loads(rows[0]["positions"]) == table.rounds[3]["positions"]
    text = records("round", SITE, "t1", table.epoch, "1")
    assert "burn" in text
    bad = run("rounds", SITE, "nope")
    assert bad.returncode == 2
    assert "no table 'nope'" in bad.stderr


async def test_concurrent_progress_writes_never_deadlock(db: Backend) -> None:
    """A recorder writes its feeds' progress from two tasks, and recorders of a group from
    several processes: each in an order of its own. Row locks taken in different orders
    deadlock in PostgreSQL, and the aborted transaction must not end the recorder."""
    keys = [(SITE, f"t{i:02}", "e1") for i in range(60)]
    tracks = {key: SeqTrack(contiguous=i, announced=i + 3) for i, key in enumerate(keys)}

    async def write(order: list[Key]) -> None:
        for _ in range(15):
            await save_progress(db, [(k, tracks[k]) for k in order], now="2026-01-01T00:00:00Z")

    await asyncio.gather(write(keys), write(keys[::-1]), write(keys[1::2] + keys[::2]))
    rows = await db.fetch("SELECT COUNT(*) FROM feed_progress")
    assert rows[0][0] == len(keys)


async def test_a_deadlocked_transaction_is_one_to_retry(pg_db: Backend) -> None:
    """PostgreSQL aborts one of two deadlocked transactions: that is DatabaseUnavailable,
    which the recorder retries, not an error that ends it."""
    async with pg_db.transaction() as tx:
        await tx.executemany(
            "INSERT INTO tables (site, table_id, first_seen, last_seen) VALUES (?, ?, ?, ?)",
            [(SITE, name, "t0", "t0") for name in ("a", "b")],
        )
    locked = [asyncio.Event(), asyncio.Event()]

    async def cross(first: str, then: str, mine: asyncio.Event, theirs: asyncio.Event) -> None:
        async with pg_db.transaction() as tx:
            update = "UPDATE tables SET last_seen = ? WHERE site = ? AND table_id = ?"
            await tx.execute(update, ("t1", SITE, first))
            mine.set()
            await theirs.wait()
            await tx.execute(update, ("t1", SITE, then))

    outcomes = await asyncio.gather(
        cross("a", "b", locked[0], locked[1]),
        cross("b", "a", locked[1], locked[0]),
        return_exceptions=True,
    )
    failed = [o for o in outcomes if o is not None]
    assert len(failed) == 1, outcomes
    assert isinstance(failed[0], DatabaseUnavailable), outcomes
    assert "deadlock" in str(failed[0])


async def test_a_full_server_or_a_read_only_one_is_one_to_retry(
    pg_url: str, pg_db: Backend
) -> None:
    """No connection slot left (or a full disk: the same class of error), and a standby
    that took over read-only: the database cannot take the commit now, so the recorder
    waits and retries, acks held, rather than ending."""
    # Roles belong to the whole server, which other tests share: names of this test's own.
    limited, reader = (f"{r}_{uuid.uuid4().hex[:8]}" for r in ("limited", "reader"))
    async with pg_db.transaction() as tx:
        await tx.execute(f"CREATE ROLE {limited} LOGIN CONNECTION LIMIT 0")
        await tx.execute(f"CREATE ROLE {reader} LOGIN")
        await tx.execute(f"ALTER ROLE {reader} SET default_transaction_read_only = on")
    for role, says in ((limited, "too many connections"), (reader, "read-only")):
        backend = PostgresBackend(pg_url.replace("recorder@", f"{role}@"))
        try:
            with pytest.raises(DatabaseUnavailable, match=says):
                async with backend.transaction() as tx:
                    await tx.execute("CREATE TABLE t (x INT)")
        finally:
            await backend.close()


async def test_a_permanent_gap_is_written_when_the_database_comes_back(
    own_postgres: PostgresServer,
) -> None:
    """The table says it no longer holds feed_seq 2..3 just as the database goes away: the
    gap is still written once it is back (marked in memory only when stored)."""
    table = LightTable("127.0.0.1", 1, site=SITE, table="t1", seed=3)
    table.deal_round()
    table.forget(2, 3)
    table._on_replay(
        {"table": "t1", "site": SITE, "epoch": table.epoch}
        | {"recorder": "r1", "from_feed_seq": 2, "to_feed_seq": 3}
    )
    raised = parse_message(*table.held[table.last_feed_seq])
    async with migrated(own_postgres.create_database()) as db:
        book = FeedBook("r1")
        # As the recorder takes them: the alert carries no epoch; the status names it.
        status = parse_message(f"{table.prefix}/status", table.status())
        _, alert = await book.with_epochs(db, [status, raised])
        assert alert.epoch == table.epoch
        await book.track(db, (SITE, "t1", table.epoch))  # loaded while the database is up
        await asyncio.to_thread(own_postgres.stop)
        with pytest.raises(DatabaseUnavailable):
            await book.absorb(db, [alert])
        await asyncio.to_thread(own_postgres.start)
        await book.absorb(db, [alert])
        gaps = await queries.gaps(db)
    assert [(p["from_feed_seq"], p["to_feed_seq"]) for p in gaps[0]["permanent"]] == [(2, 3)]


async def test_a_message_naming_another_table_than_its_topic_counts_for_neither(
    db: Backend,
) -> None:
    """Stored as it came (with its problem), but no table's feed counts it or is acked for it."""
    epoch = str(uuid.uuid4())

    def event(topic_table: str, payload_table: str, seq: int) -> bytes:
        return json.dumps(
            {
                "schema": "table-event/1",
                "id": str(uuid.uuid4()),
                "table": payload_table,
                "site": SITE,
                "ts": "2026-03-01T20:00:00.000Z",
                "epoch": epoch,
                "feed_seq": seq,
                "seq": seq,
                "round_id": None,
                "type": "reshuffle_due",
            }
        ).encode()

    book = FeedBook("r1")
    acks = []
    for topic_table, payload_table, seq in (("war-02", "war-02", 1), ("war-01", "war-02", 2)):
        msg = parse_message(
            f"casino/{SITE}/table/{topic_table}/events", event(topic_table, payload_table, seq)
        )
        batch = await book.with_epochs(db, [msg])
        await store_batch(db, batch, received="2026-03-01T20:00:00.100Z")
        await book.absorb(db, batch)
        acks += [(o.topic, json.loads(o.payload)) for o in book.acks()]
    stored = await db.fetch("SELECT epoch, feed_seq, problem FROM messages", [])
    assert sorted((r[0], r[1]) for r in stored if r[2] is None) == [(epoch, 1)]
    misplaced = [r for r in stored if r[2] is not None]
    assert [(r[0], r[1]) for r in misplaced] == [(None, None)]  # kept, in no table's feed
    assert "war-01" in misplaced[0][2]
    # war-02 sent only 1: its ack never covers 2, and nothing goes to war-01's ack topic.
    assert all(a["feed_seq"] == 1 for _, a in acks)
    assert {t for t, _ in acks} == {f"casino/{SITE}/table/war-02/ack"}


async def test_a_late_alert_of_an_old_epoch_counts_in_its_own(db: Backend) -> None:
    """An alert names its epoch: one of the table's old journal, arriving after the table
    announced a new one, is never counted (nor acked) as the new epoch's message."""
    table, old, new = f"t-{uuid.uuid4().hex[:8]}", str(uuid.uuid4()), str(uuid.uuid4())
    prefix = f"casino/{SITE}/table/{table}"
    envelope = {"table": table, "site": SITE, "ts": "2026-03-01T20:00:00.000Z"}
    status: dict[str, Any] = {"schema": "table-status/1", "id": str(uuid.uuid4()), **envelope}
    status |= {"online": True, "version": "1", "rules": "ny", "decks": 6, "positions": 7}
    status |= {"devices": {}, "outbox": {}, "currency": "USD", "instance": "i2"}
    status |= {"started": envelope["ts"], "journal": {"state": "ok", "detail": None}}
    status |= {"feed": {"epoch": new, "last_feed_seq": 1}}
    alert: dict[str, Any] = {"schema": "table-alert/1", "id": str(uuid.uuid4()), **envelope}
    alert |= {"feed_seq": 1, "epoch": old, "alert": str(uuid.uuid4()), "code": "LATE_WAGER"}
    alert |= {"severity": "warning", "message": "late", "round_id": None, "position": None}
    alert |= {"spot": None, "resolved_by": None}
    book = FeedBook("r1")
    batch = [
        parse_message(f"{prefix}/status", json.dumps(status).encode()),
        parse_message(f"{prefix}/alerts", json.dumps(alert).encode()),
    ]
    batch = await book.with_epochs(db, batch)
    await store_batch(db, batch, received="2026-03-01T20:00:00.100Z")
    await book.absorb(db, batch)
    stored = await db.fetch(
        "SELECT epoch FROM messages WHERE topic = 'alerts' AND table_id = ?", [table]
    )
    assert [r[0] for r in stored] == [old]
    assert not [o for o in book.acks() if json.loads(o.payload)["epoch"] == new]


async def test_a_gap_left_in_an_old_epoch_becomes_permanent_not_asked_for(db: Backend) -> None:
    """A table ignores a replay for another epoch (its new journal holds nothing of the old):
    once the new epoch has lasted, the gap is a known, permanent gap."""
    table, old, new = f"t-{uuid.uuid4().hex[:8]}", str(uuid.uuid4()), str(uuid.uuid4())
    prefix = f"casino/{SITE}/table/{table}"

    def event(epoch: str, seq: int) -> bytes:
        body: dict[str, Any] = {"schema": "table-event/1", "id": str(uuid.uuid4()), "table": table}
        body |= {"site": SITE, "ts": "2026-03-01T20:00:00.000Z", "epoch": epoch}
        body |= {"feed_seq": seq, "seq": seq, "round_id": None, "type": "reshuffle_due"}
        return json.dumps(body).encode()

    status: dict[str, Any] = {"schema": "table-status/1", "id": str(uuid.uuid4())}
    status |= {"table": table, "site": SITE}
    status |= {"ts": "2026-03-01T20:00:01.000Z", "feed": {"epoch": new, "last_feed_seq": 1}}
    book = FeedBook("r1")
    for batch in (
        [(f"{prefix}/events", event(old, 1)), (f"{prefix}/events", event(old, 3))],
        [(f"{prefix}/status", json.dumps(status).encode()), (f"{prefix}/events", event(new, 1))],
    ):
        parsed = await book.with_epochs(db, [parse_message(t, p) for t, p in batch])
        await store_batch(db, parsed, received="2026-03-01T20:00:01.100Z")
        await book.absorb(db, parsed)
    asked = []
    for now in (0.0, GAP_WAIT_S + 1, 10 * GAP_WAIT_S, SUPERSEDED_AFTER_S + 300.0):
        asked += [json.loads(o.payload) for o in await book.check(db, now)]
        await book.save(db)
    assert not [a for a in asked if a["epoch"] == old]
    mine = {g["epoch"]: g for g in await queries.gaps(db) if g["table"] == table}
    assert [(p["from_feed_seq"], p["to_feed_seq"]) for p in mine[old]["permanent"]] == [(2, 2)]
    assert not mine[old]["pending"]


async def test_sqlite_full_mid_commit_is_one_to_retry_and_loses_nothing(tmp_path: Path) -> None:
    """SQLite's own limit reached by an INSERT (SQLITE_FULL, as on a full disk): the commit
    is one to retry (acks held), and once there is room the same batch is stored whole."""
    async with migrated(f"sqlite://{tmp_path}/recorder.db") as db:
        table = await _stored_table(db, rounds=1)
        pages = (await db.fetch("PRAGMA page_count"))[0][0]
        await db.fetch(f"PRAGMA max_page_count = {pages + 2}")
        batch = [
            parse_message(f"casino/{SITE}/table/{table.table}/events", body)
            for body in _padded_events(table.table, 200)
        ]
        with pytest.raises(DatabaseUnavailable, match="full"):
            await store_batch(db, batch, received="2026-03-01T20:00:00.100Z")
        await db.fetch("PRAGMA max_page_count = 1073741823")
        await store_batch(db, batch, received="2026-03-01T20:00:00.200Z")
        stored = await db.fetch(
            "SELECT COUNT(*) FROM messages WHERE table_id = ? AND epoch = 'padded'", [table.table]
        )
        assert stored[0][0] == len(batch)


def _padded_events(table: str, count: int) -> list[bytes]:
    out = []
    for seq in range(1, count + 1):
        body: dict[str, Any] = {"schema": "table-event/1", "id": str(uuid.uuid4())}
        body |= {"table": table, "site": SITE, "ts": "2026-03-01T20:00:00.000Z"}
        body |= {"epoch": "padded", "feed_seq": seq, "seq": seq, "round_id": None}
        body |= {"type": "reshuffle_due", "note": "x" * 3000}
        out.append(json.dumps(body).encode())
    return out


async def test_a_nul_or_a_lone_surrogate_in_a_message_is_stored_with_a_problem(
    db: Backend,
) -> None:
    """PostgreSQL's text holds no NUL, and no UTF-8 a lone surrogate. One in a table's
    message (an id, a dealer, an alert's text) must neither fail the commit (every table's
    acks would wait behind it, for good) nor be dropped: the payload is kept as sent, the
    columns read U+FFFD, with a problem."""
    table = LightTable("127.0.0.1", 1, site=SITE, table="t1", seed=3)
    table.deal_round()
    held = [(topic, json.loads(payload)) for topic, payload in table.held.values()]
    event = next(i for i, (t, _) in enumerate(held) if t.endswith("/events"))
    held[event][1]["id"] += "\x00"
    record = next(body for t, body in held if t.endswith("/rounds"))
    record["dealer"] = "d\ud800"  # a lone surrogate: no UTF-8 holds it
    alert: dict[str, Any] = {"schema": "table-alert/1", "id": str(uuid.uuid4()), "table": "t1"}
    alert |= {"site": SITE, "ts": "2026-03-01T20:00:00.000Z", "epoch": table.epoch}
    alert |= {"feed_seq": table.last_feed_seq + 1, "alert": str(uuid.uuid4())}
    alert |= {"code": "LATE_WAGER", "severity": "warning", "message": "late\x00"}
    alert |= {"round_id": None, "position": None, "spot": None, "resolved_by": None}
    held.append((f"{table.prefix}/alerts", alert))
    batch = [parse_message(t, json.dumps(body).encode()) for t, body in held]
    done = await store_batch(db, batch, received="2026-03-01T20:00:01.000Z")
    assert len(done.new) == len(held)
    rows = await db.fetch(
        "SELECT id, feed_seq, payload, problem FROM messages WHERE epoch = ?", [table.epoch]
    )
    assert sorted(r[1] for r in rows) == list(range(1, table.last_feed_seq + 2))
    odd = [r for r in rows if r[3] is not None]
    assert len(odd) == 3, odd
    assert all("NUL" in r[3] for r in odd)
    assert all("\\u" in r[2] for r in odd)  # the payload itself, with the table's escapes
    assert any(r[0].endswith("\ufffd") for r in odd)
    dealers = await db.fetch("SELECT dealer FROM rounds WHERE epoch = ?", [table.epoch])
    assert [r[0] for r in dealers] == ["d\ufffd"]
    texts = await db.fetch(
        "SELECT message FROM alerts WHERE code = 'LATE_WAGER' AND id = ?", [alert["id"]]
    )
    assert [r[0] for r in texts] == ["late\ufffd"]


async def test_the_light_tables_messages_match_the_feeds_schemas(db: Backend) -> None:
    """The benches and these tests feed the recorder from light tables: what they send
    must be what a table sends, or a check passes on messages no table would make."""
    await _stored_table(db)
    assert await db.fetch("SELECT topic, problem FROM messages WHERE problem IS NOT NULL") == []


@pytest.mark.parametrize("where", ["round_id", "net", "amount", "feed_seq"])
async def test_a_number_no_column_holds_is_a_problem_not_a_failed_commit(
    db: Backend, where: str
) -> None:
    """Past 2^63 no column holds a number: a body with one beyond the feed's largest whole
    number is stored as sent, with its problem, and adds nothing to the figures."""
    table = LightTable("127.0.0.1", 1, site=SITE, table="t1", seed=3)
    table.deal_round()
    held = [(topic, json.loads(payload)) for topic, payload in table.held.values()]
    record = next(body for t, body in held if t.endswith("/rounds"))
    if where == "amount":
        record["positions"][0]["wagers"][0]["amount"] = 2**63
    else:
        record[where] = 2**63
    if where == "feed_seq":  # the envelope: it cannot be stored by its sequence at all
        with pytest.raises(IntakeError, match="feed_seq"):
            parse_message(f"{table.prefix}/rounds", json.dumps(record).encode())
        return
    batch = [parse_message(t, json.dumps(body).encode()) for t, body in held]
    await store_batch(db, batch, received="2026-03-01T20:00:01.000Z")
    problems = await db.fetch(
        "SELECT problem FROM messages WHERE epoch = ? AND problem IS NOT NULL", [table.epoch]
    )
    assert len(problems) == 1
    assert where in problems[0][0]
    assert await db.fetch("SELECT id FROM rounds WHERE epoch = ?", [table.epoch]) == []
