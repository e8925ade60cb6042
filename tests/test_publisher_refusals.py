"""The publisher against a real Mosquitto that refuses: a publish the ACL forbids, a
packet the broker drops the connection over, a message that cannot be encoded, MQTT
3.1.1 that hides refusals, and a refused view."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.journal import OutboxMessage
from table_controller.service.publisher import POISON_LOSSES
from tests.publisher_rig import (
    PREFIX,
    alert_message,
    event_message,
    running_table,
    state_message,
    subscribed,
    watching,
)


def _acl_broker(tmp_path: Path) -> MosquittoBroker:
    acl = tmp_path / "acl"
    # The table may publish its events and status, but not its alerts.
    acl.write_text(
        f"topic readwrite {PREFIX}/events\ntopic readwrite {PREFIX}/status\ntopic read #\n",
        encoding="utf-8",
    )
    # Mosquitto started as root reads the ACL after dropping to its own user,
    # which cannot enter pytest's private tmp folders: stay root (no effect otherwise).
    return MosquittoBroker(extra_config=f"user root\nacl_file {acl}\n")


async def test_a_refused_publish_stays_in_the_outbox_and_is_reported_once(
    tmp_path: Path,
) -> None:
    first, refused, second = event_message(1), alert_message(), event_message(2)
    with _acl_broker(tmp_path) as broker, watching() as log:
        async with (
            subscribed(broker.port) as sub,
            running_table(
                tmp_path / "j.sqlite3",
                broker.url,
                journal_kwargs={"refused_retry_base_s": 0.02, "refused_retry_max_s": 0.05},
            ) as table,
        ):
            table.publish(first, refused, second)
            # The message behind the refused one is not held up.
            assert [g.id for g in await sub.take(2)] == [first.id, second.id]
            # It is offered again (held back between tries), and refused again.
            await log.wait(logging.DEBUG, "refused again", count=3)
            assert table.refused == [(refused, 0x87)]
            assert table.journal.outbox_depth() == 1
            [refusal] = table.journal.refusals()
            assert refusal.message == refused
            assert refusal.reason_code == 0x87
            assert refusal.count >= 4
            assert table.journal.sent_messages("events", 10) == [first, second]
    assert len(log.matching(logging.WARNING, "refused message")) == 1


async def test_a_message_the_broker_drops_the_connection_over_does_not_block_the_rest(
    tmp_path: Path,
) -> None:
    # Mosquitto drops a client that sends a packet above max_packet_size: with a
    # DISCONNECT 0x95 when that arrives first, else as a plain reset that does not
    # say which message it choked on.
    first, second = event_message(1), event_message(2)
    huge = OutboxMessage(
        id="huge-1",
        topic=f"{PREFIX}/events",
        payload=json.dumps({"id": "huge-1", "padding": "x" * 4000}).encode(),
        qos=1,
        retain=False,
    )
    with MosquittoBroker(extra_config="max_packet_size 2000\n") as broker:
        async with (
            subscribed(broker.port, f"{PREFIX}/events") as sub,
            running_table(tmp_path / "j.sqlite3", broker.url) as table,
        ):
            table.publish(first, huge, second)
            # At least once: a message whose PUBACK the reset swallowed comes again.
            assert [g.id for g in await sub.take_unique(2)] == [first.id, second.id]
            await table.drained()
            [(refused, code)] = table.refused
            assert refused == huge
            assert [r.message for r in table.journal.refusals()] == [huge]
            # The first connection may lose several messages at once; after that
            # they go one at a time, so the one the broker chokes on is known.
            if code == 0x95:
                assert 2 <= table.publisher.connects <= 2 + POISON_LOSSES
            else:
                assert code == 0x80
                assert 1 + POISON_LOSSES <= table.publisher.connects <= 2 + POISON_LOSSES
            assert not table.conflicts


async def test_a_message_that_cannot_be_encoded_is_set_aside(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    first, second = event_message(1), event_message(2)
    # MQTT limits a topic to 65535 bytes: paho refuses to encode this one.
    unsendable = OutboxMessage(
        id="long-topic", topic=f"{PREFIX}/{'x' * 70_000}", payload=b"{}", qos=1, retain=False
    )
    async with (
        subscribed(mosquitto.port, f"{PREFIX}/events") as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        table.publish(first, unsendable, second)
        assert [g.id for g in await sub.take(2)] == [first.id, second.id]
        await table.drained()
        assert table.refused == [(unsendable, 0x83)]
        assert table.publisher.connects == 1


async def test_mqtt_311_works_but_warns_that_refusals_are_invisible(tmp_path: Path) -> None:
    first, refused = event_message(1), alert_message()
    with _acl_broker(tmp_path) as broker, watching() as log:
        async with (
            subscribed(broker.port) as sub,
            running_table(tmp_path / "j.sqlite3", broker.url, protocol="3.1.1") as table,
        ):
            table.publish(first, refused, event_message(2))
            got = await sub.take(2)
            await table.drained()
            # The broker dropped the alert and said it was fine: that is why 5 is the default.
            assert table.refused == []
            assert table.journal.outbox_depth() == 0
    assert got[0].id == first.id
    assert got[0].content_type is None
    assert log.matching(logging.WARNING, "3.1.1")


async def test_a_refused_view_is_reported_once_per_topic_and_blocks_nothing(
    tmp_path: Path,
) -> None:
    """A view is not journaled, so the journal cannot count its refusals: the publisher
    reports the first refusal of each view topic, and what follows goes on."""
    first_view, second_view = state_message(5), state_message(6)
    after = event_message(1)
    with _acl_broker(tmp_path) as broker, watching() as log:
        async with (
            subscribed(broker.port) as sub,
            running_table(tmp_path / "j.sqlite3", broker.url) as table,
        ):
            await table.wait_connected()
            table.publisher.show(first_view)
            await log.wait(logging.WARNING, "refused message")
            table.publisher.show(second_view)
            table.publish(after)
            assert [g.id for g in await sub.take(1)] == [after.id]
            await log.wait(logging.DEBUG, "refused again")
            assert table.refused == [(first_view, 0x87)]
    assert len(log.matching(logging.WARNING, "refused message")) == 1
