"""A recorder and light tables on a real Mosquitto, into SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import uuid

import aiomqtt

from bench.light_table import LightTable
from table_controller.recorder import queries
from table_controller.recorder.intake import parse_message
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import store_batch
from table_controller.recorder.subscriber import Recorder
from table_controller.rigs.broker import MosquittoBroker
from tests.recorder.checks import assert_complete
from tests.recorder.conftest import SITE, dealing, recorder_config, running, unique

ACK_TIMEOUT_S = 30.0

# An ``alerts`` message as a table sends it: no ``epoch`` (docs/feed.md).
_ALERT = json.dumps(
    {
        "schema": "table-alert/1",
        "id": "9b4c3f1e-0d6a-4c1e-9a57-3c1f0e2d7b90",
        "table": "t",
        "site": SITE,
        "ts": "2026-12-01T10:00:00.000Z",
        "alert": "A1",
        "code": "NO_MORE_BETS_MISSING",
        "severity": "warning",
        "message": "the deal began without NO_MORE_BETS",
        "round_id": 1,
        "position": None,
        "spot": None,
        "resolved_by": None,
        "feed_seq": 1,
    }
)


async def test_every_message_stored_once_and_acked(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    cfg = recorder_config(mosquitto, db_url)
    run = unique("run")
    tables = [
        LightTable(mosquitto.host, mosquitto.port, site=SITE, table=f"t{i}-{run}") for i in range(3)
    ]
    async with running(Recorder(cfg.mqtt, db)), dealing(*tables):
        for _ in range(10):
            for t in tables:
                t.deal_round()
        for t in tables:
            await t.wait_acked(ACK_TIMEOUT_S)
    await assert_complete(db, *tables)
    rounds = await queries.rounds(db, SITE, tables[0].table, last=100)
    assert [r["round_id"] for r in rounds] == list(range(10, 0, -1))


async def test_a_dropped_message_is_filled_by_replay(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    """(e): feed_seq 3 is never sent; the recorder sees 4.. and asks for it."""
    cfg = recorder_config(mosquitto, db_url)
    table = LightTable(
        mosquitto.host, mosquitto.port, site=SITE, table=unique("drop"), drop=frozenset({3})
    )
    async with running(Recorder(cfg.mqtt, db)), dealing(table):
        table.deal_round()
        await table.wait_acked(ACK_TIMEOUT_S)
    # 3 went out only in answer to a replay (a slow start may ask for more besides).
    assert any(first <= 3 <= last for first, last in table.replays)
    await assert_complete(db, table)


async def test_a_lost_tail_is_seen_from_status(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    """The last message is lost: only status.feed.last_feed_seq shows it."""
    cfg = recorder_config(mosquitto, db_url)
    table = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=unique("tail"))
    table.drop = {7}
    async with running(Recorder(cfg.mqtt, db)), dealing(table):
        table.deal_round()  # 3 positions: 1 + 5 cards + decisions + settled + record
        table.drop = set()
        assert table.last_feed_seq >= 7
        await table.wait_acked(ACK_TIMEOUT_S)
    await assert_complete(db, table)


async def test_what_the_table_no_longer_holds_is_a_permanent_gap(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    cfg = recorder_config(mosquitto, db_url)
    table = LightTable(
        mosquitto.host, mosquitto.port, site=SITE, table=unique("gone"), drop=frozenset({2})
    )
    table.deal_round()
    table.forget(2, 2)  # pruned before anyone asked: the replay cannot fill 2, 4, 5
    table.forget(4, 5)
    async with running(Recorder(cfg.mqtt, db)), dealing(table):
        await table.wait_acked(ACK_TIMEOUT_S)
    gaps = [g for g in await queries.gaps(db) if g["table"] == table.table]
    assert [(p["from_feed_seq"], p["to_feed_seq"]) for p in gaps[0]["permanent"]] == [
        (2, 2),
        (4, 5),
    ]
    assert gaps[0]["pending"] == []
    stored = await db.fetch("SELECT COUNT(*) FROM messages WHERE table_id = ?", (table.table,))
    assert stored[0][0] == table.last_feed_seq - 3


async def test_a_table_restart_with_a_new_epoch(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    """(f): the same table with a new journal starts feed_seq again at 1."""
    cfg = recorder_config(mosquitto, db_url)
    name = unique("epochs")
    first = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=name, seed=1)
    async with running(Recorder(cfg.mqtt, db)):
        async with dealing(first):
            first.deal_round()
            first.deal_round()
            await first.wait_acked(ACK_TIMEOUT_S)
        second = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=name, seed=2)
        async with dealing(second):
            second.deal_round()
            await second.wait_acked(ACK_TIMEOUT_S)
    await assert_complete(db, first, second)
    assert first.epoch != second.epoch


async def test_an_alert_before_its_epoch_is_known_is_stored_under_that_epoch(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    """An ``alerts`` message carries no ``epoch`` (docs/feed.md). One that arrives before the
    recorder knows the table's epoch is left to the replay, never stored without it."""
    name, epoch = unique("noepoch"), str(uuid.uuid4())
    prefix = f"casino/{SITE}/table/{name}"
    alert = json.dumps(dict(json.loads(_ALERT), table=name)).encode()
    cfg = recorder_config(mosquitto, db_url)
    async with (
        running(Recorder(cfg.mqtt, db)) as recorder,
        aiomqtt.Client(mosquitto.host, mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5) as t,
    ):
        await t.subscribe(f"{prefix}/replay", qos=1)
        await t.subscribe(f"{prefix}/ack", qos=1)
        await recorder.subscribed()
        async with recorder.committed:
            await t.publish(f"{prefix}/alerts", alert, qos=1)  # no status yet: epoch unknown
            await asyncio.wait_for(recorder.committed.wait(), ACK_TIMEOUT_S)
        light = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=name, epoch=epoch)
        light.last_feed_seq = 1
        await t.publish(f"{prefix}/status", light.status(), qos=1, retain=True)
        async with asyncio.timeout(ACK_TIMEOUT_S):
            async for message in t.messages:
                assert isinstance(message.payload, bytes)
                body = json.loads(message.payload)
                if str(message.topic).endswith("/replay"):
                    assert (body["epoch"], body["from_feed_seq"]) == (epoch, 1)
                    await t.publish(f"{prefix}/alerts", alert, qos=1)  # the table's answer
                elif body["epoch"] == epoch and body["feed_seq"] == 1:
                    break  # acknowledged
        await t.publish(f"{prefix}/status", b"", qos=1, retain=True)
    rows = await db.fetch("SELECT epoch, feed_seq FROM messages WHERE table_id = ?", (name,))
    assert [tuple(r) for r in rows] == [(epoch, 1)]


async def test_an_alert_first_after_a_restart_takes_the_epoch_the_database_knows(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    """A restarted recorder may be handed a table's ``alerts`` message (no ``epoch``) before
    that table's ``status``: the status it stored before names the epoch."""
    name, epoch = unique("known"), str(uuid.uuid4())
    light = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=name, epoch=epoch)
    status = parse_message(f"{light.prefix}/status", light.status())
    await store_batch(db, [status], received="2026-12-01T10:00:00.000Z")
    alert = dict(json.loads(_ALERT), table=name, id=str(uuid.uuid4()))
    cfg = recorder_config(mosquitto, db_url)
    async with (
        running(Recorder(cfg.mqtt, db)) as recorder,
        aiomqtt.Client(mosquitto.host, mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5) as t,
    ):
        await recorder.subscribed()
        async with recorder.committed:
            await t.publish(f"{light.prefix}/alerts", json.dumps(alert).encode(), qos=1)
            # Not any commit (other tests' retained statuses are committed too): the
            # alert's, the only feed message on the broker now.
            stored = recorder.committed.wait_for(lambda: recorder.stored >= 1)
            await asyncio.wait_for(stored, ACK_TIMEOUT_S)
    rows = await db.fetch("SELECT epoch, feed_seq FROM messages WHERE table_id = ?", (name,))
    assert [tuple(r) for r in rows] == [(epoch, 1)]
