"""The publisher against a real Mosquitto: topics, order across an outage, the last
will, a clean shutdown and a duplicate table identity."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from table_controller.feed.payloads import TOPIC_RULES, Topic, parse_payload
from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.publisher import IDENTITY_CONFLICT_RETRY_S, PEER_CLOSES_FOR_CONFLICT
from tests.publisher_rig import (
    ENV,
    PREFIX,
    WAIT_S,
    alert_message,
    event_message,
    ids,
    now,
    relay_to,
    running_table,
    status_message,
    subscribed,
    watching,
)


async def test_each_topic_goes_out_with_its_qos_retain_and_content_type(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    ts = now()
    messages = [
        status_message(),
        ENV.state(
            {
                "phase": "betting",
                "round_id": 5,
                "held": False,
                "dealer": "D-114",
                "shoe": {"id": "shoe-1", "cards_read": 12, "cover_seen": False},
                "positions": [{"position": 1, "wagers": {"initial": 2500}, "cards": []}],
                "dealer_cards": [],
                "burn_cards": 0,
            },
            ts=ts,
        ),
        event_message(1),
        ENV.round_record(
            {
                "round_id": 4,
                "shoe_id": "shoe-1",
                "dealer": "D-114",
                "rules": "ny",
                "rules_overrides": {},
                "started": ts,
                "ended": ts,
                "void": False,
                "void_reason": None,
                "cards": [],
                "dealer_card": None,
                "dealer_war_card": None,
                "positions": [],
                "net": 0,
                "alerts": [],
            },
            ts=ts,
        ),
        alert_message(),
        ENV.stats(
            {
                "rounds": 4,
                "rounds_per_hour": 60.0,
                "ties": 0,
                "wars": 0,
                "surrenders": 0,
                "voids": 0,
                "alerts_by_code": {"LATE_WAGER": 1},
                "drop": 10000,
                "win": 250,
            },
            ts=ts,
        ),
    ]
    assert {m.topic.rsplit("/", 1)[1] for m in messages} == {
        t.value for t, rule in TOPIC_RULES.items() if rule.by_table
    }
    async with (
        subscribed(mosquitto.port) as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        table.publish(*messages)
        got = await sub.take(len(messages))
        await table.drained()
        assert table.journal.outbox_depth() == 0
    assert [g.id for g in got] == ids(messages)
    for sent, received in zip(messages, got, strict=True):
        rule = TOPIC_RULES[Topic(received.topic.rsplit("/", 1)[1])]
        assert received.topic == sent.topic
        assert received.payload == sent.payload
        assert received.qos == rule.qos == 1  # subscribed at QoS 2: what arrives is what was sent
        assert received.retain is rule.retained
        assert received.content_type == "application/json"
        parse_payload(received.payload)


async def test_the_outbox_drains_in_order_after_the_broker_comes_back(
    tmp_path: Path, own_mosquitto: MosquittoBroker
) -> None:
    before = [event_message(seq) for seq in range(1, 6)]
    during = [event_message(seq) for seq in range(6, 56)]
    async with relay_to(own_mosquitto.port) as relay:
        with watching() as log:
            async with running_table(tmp_path / "j.sqlite3", relay.url) as table:
                async with subscribed(own_mosquitto.port) as sub:
                    await table.wait_connected()
                    table.publish(*before)
                    assert [g.id for g in await sub.take(len(before))] == ids(before)
                    await table.drained()
                # The broker goes away, and the table keeps producing.
                relay.open = False
                own_mosquitto.stop()
                await log.wait(logging.WARNING, "lost the broker connection")
                table.publish(*during)
                assert table.journal.outbox_depth() == len(during)
                own_mosquitto.start()
                async with subscribed(own_mosquitto.port) as sub:
                    relay.open = True
                    got = await sub.take(len(during))
                    await table.drained()
                assert table.publisher.connects == 2
                assert table.journal.outbox_depth() == 0
    assert [g.id for g in got] == ids(during)
    assert [g.body["seq"] for g in got] == list(range(6, 56))
    assert [g.payload for g in got] == [m.payload for m in during]


async def test_the_last_will_goes_out_when_the_connection_dies(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    status_topic = f"{PREFIX}/status"
    async with (
        relay_to(mosquitto.port) as relay,
        subscribed(mosquitto.port, status_topic) as sub,
        running_table(tmp_path / "j.sqlite3", relay.url, status_on_connect=True) as table,
    ):
        online = await sub.until(lambda r: r.id in ids(table.statuses))
        assert table.wills, "the will is built before connecting"
        will = table.wills[-1]
        # Away longer than the will's delay (a reconnect within it keeps the session, and
        # the broker then publishes no will: MQTT 5 §3.1.3.2.2).
        relay.open = False
        relay.cut()
        offline = await sub.until(lambda r: r.id == will.id)
        relay.open = True
        assert not offline.body["online"]
        assert offline.retain
        assert offline.payload == will.payload
        assert offline.content_type == "application/json"
        # Built at the connect, before the status that the connect enqueued.
        assert parse_payload(offline.payload).ts <= parse_payload(online.payload).ts
        # The publisher comes back by itself, with a will built for the new connect.
        await sub.until(lambda r: r.id == table.statuses[-1].id and len(table.statuses) == 2)
        # One will per connect attempt (the gated ones too), each built anew.
        assert len(table.wills) >= 2
        assert table.wills[-1].id != will.id


async def test_a_clean_shutdown_publishes_offline_and_leaves_no_will(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    status_topic = f"{PREFIX}/status"
    final = status_message(online=False)
    async with running_table(tmp_path / "j.sqlite3", mosquitto.url) as table:
        await table.wait_connected()
        assert await table.publisher.publish_final(final, timeout_s=WAIT_S)
        assert table.task is not None
        table.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await table.task
        assert not table.publisher.connected
        # Not connected any more: nothing more can go out.
        assert not await table.publisher.publish_final(status_message(online=False), 1.0)
    # A subscriber arriving later gets the final status, not the will.
    async with subscribed(mosquitto.port, status_topic, retained=True) as sub:
        retained = await sub.next()
    assert retained.retain
    assert retained.id == final.id


async def test_two_tables_with_one_identity_do_not_fight_for_the_session(
    tmp_path: Path, own_mosquitto: MosquittoBroker
) -> None:
    with watching() as log:
        async with running_table(tmp_path / "a.sqlite3", own_mosquitto.url) as first:
            await first.wait_connected()
            async with running_table(tmp_path / "b.sqlite3", own_mosquitto.url) as second:
                # Each connect takes the session from the other: one of them gives way.
                waits = [
                    asyncio.create_task(first.conflict.wait()),
                    asyncio.create_task(second.conflict.wait()),
                ]
                try:
                    await asyncio.wait(waits, timeout=WAIT_S, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for wait in waits:
                        wait.cancel()
                    await asyncio.gather(*waits, return_exceptions=True)
                assert first.conflict.is_set() or second.conflict.is_set()
                loser, winner = (first, second) if first.conflict.is_set() else (second, first)
                assert loser.publisher.identity_conflict
                assert loser.publisher.retry_delay_s >= 0.9 * IDENTITY_CONFLICT_RETRY_S
                assert not loser.publisher.connected
                # The other keeps the session and publishes.
                async with subscribed(own_mosquitto.port) as sub:
                    message = event_message(1)
                    winner.publish(message)
                    got = await sub.until(lambda r: r.topic.endswith("/events"))
                    await winner.drained()
                assert got.id == message.id
                assert len(loser.conflicts) == 1
                assert "another client is connected as 'war-07'" in loser.conflicts[0]
                assert winner.conflicts == []
                assert not winner.publisher.identity_conflict
                assert loser.publisher.connects >= PEER_CLOSES_FOR_CONFLICT
    assert len(log.matching(logging.ERROR, "duplicate table identity")) == 1


async def _takeover_broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Speaks just enough MQTT 5 to accept a CONNECT and then hand the session away.

    Mosquitto 2.0.11 closes the old connection without saying why; newer
    brokers send DISCONNECT with reason 0x8E, which this stand-in does.
    """
    try:
        await reader.readexactly(1)  # CONNECT fixed header
        length, shift = 0, 0
        while True:
            byte = (await reader.readexactly(1))[0]
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        await reader.readexactly(length)
        writer.write(bytes([0x20, 0x03, 0x00, 0x00, 0x00]))  # CONNACK: success, no properties
        writer.write(bytes([0xE0, 0x02, 0x8E, 0x00]))  # DISCONNECT: session taken over
        await writer.drain()
        await reader.read()
    except (asyncio.IncompleteReadError, OSError):
        pass
    finally:
        writer.transport.abort()


async def test_a_broker_saying_session_taken_over_is_believed_at_once(
    tmp_path: Path,
) -> None:
    server = await asyncio.start_server(_takeover_broker, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with watching() as log:
            async with running_table(tmp_path / "j.sqlite3", f"mqtt://127.0.0.1:{port}") as table:
                await asyncio.wait_for(table.conflict.wait(), WAIT_S)
                assert table.publisher.connects == 1
                assert "0x8E" in table.conflicts[0]
                await log.wait(logging.ERROR, "duplicate table identity")
                assert table.publisher.retry_delay_s >= 0.9 * IDENTITY_CONFLICT_RETRY_S
    finally:
        server.close()
        await server.wait_closed()
