"""A committed input's messages go onto the wire in the input's own turn of the event loop.

The proof is a subscriber on a thread of its own: the test holds the event loop
(a blocking wait on that thread) right after ``handle`` returns, so nothing
scheduled for later (the drain task, the views) can run, and the message must
still reach the subscriber through the real broker. The guards are tested too:
a drain with work of its own keeps the outbox's order, and a connection that
breaks with such a message in flight sends it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.compose import Table, compose
from table_controller.service.config import parse_config
from table_controller.service.envelope import Envelope
from table_controller.service.journal import Journal, OutboxMessage
from tests.publisher_rig import alert_body
from tests.service.journal_tables import session
from tests.tcp_relay import relay_to

WAIT_S = 10.0


class ThreadSubscriber:
    """A paho MQTT 5 subscriber on its own network thread: it receives while the test's
    event loop is held."""

    def __init__(self, port: int, topic: str) -> None:
        self._lock = threading.Condition()
        self.ids: list[str] = []
        self._client = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"sub-{uuid.uuid4().hex[:8]}",
            protocol=paho.MQTTv5,
        )
        subscribed = threading.Event()
        self._client.on_subscribe = lambda *args: subscribed.set()
        self._client.on_message = self._on_message
        self._client.connect("127.0.0.1", port)
        self._client.loop_start()
        self._client.subscribe(topic, qos=1)
        if not subscribed.wait(WAIT_S):
            raise TimeoutError("no SUBACK")

    def _on_message(self, client: paho.Client, userdata: object, msg: paho.MQTTMessage) -> None:
        with self._lock:
            self.ids.append(json.loads(msg.payload)["id"])
            self._lock.notify_all()

    def wait_for(self, ids: list[str], timeout_s: float = WAIT_S) -> bool:
        """Block this thread until every id in ``ids`` has arrived (False at the timeout)."""
        with self._lock:
            return self._lock.wait_for(lambda: set(ids) <= set(self.ids), timeout_s)

    def wait_for_more(self, seen: int, timeout_s: float = WAIT_S) -> bool:
        """Block this thread until more than ``seen`` messages have arrived."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self.ids) > seen, timeout_s)

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()
        # paho closes its wake-up socket pair only when reinitialised or collected.
        self._client.reinitialise()


@contextlib.contextmanager
def thread_subscriber(port: int, topic: str) -> Iterator[ThreadSubscriber]:
    sub = ThreadSubscriber(port, topic)
    try:
        yield sub
    finally:
        sub.close()


@pytest.fixture
def acl_mosquitto(tmp_path: Path) -> Iterator[MosquittoBroker]:
    """A broker that refuses every table's alerts (PUBACK 0x87) and takes the rest."""
    acl = tmp_path / "acl"
    leaves = ("events", "status", "state", "stats", "rounds")
    acl.write_text(
        "".join(f"topic readwrite casino/+/table/+/{leaf}\n" for leaf in leaves) + "topic read #\n",
        encoding="utf-8",
    )
    # Mosquitto started as root reads the ACL after dropping to its own user, which
    # cannot enter pytest's private tmp folders: stay root (no effect otherwise).
    with MosquittoBroker(extra_config=f"user root\nacl_file {acl}\n") as broker:
        yield broker


@contextlib.asynccontextmanager
async def wired_table(tmp_path: Path, broker_url: str) -> AsyncIterator[Table]:
    """The runner, publisher and inbox as ``run`` wires them, connected and caught up."""
    cfg = parse_config(
        {
            "table": {"id": f"war-{uuid.uuid4().hex[:8]}", "site": "main-floor", "rules": "ny"},
            "devices": {"shoe": "socket://127.0.0.1:9", "console": "socket://127.0.0.1:9"},
            "storage": {"path": str(tmp_path / "journal.sqlite3")},
            "mqtt": {"url": broker_url},
        }
    )
    journal = Journal(cfg.storage.path)
    connected = asyncio.Event()
    table_ref: list[Table] = []

    def on_connect() -> None:
        table_ref[0].runner.on_broker_connect()
        connected.set()

    table = compose(cfg, journal, on_connect=on_connect)
    table_ref.append(table)
    task = asyncio.create_task(table.publisher.run())
    try:
        await asyncio.wait_for(connected.wait(), WAIT_S)
        await asyncio.wait_for(table.publisher.drained(), WAIT_S)
        yield table
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        journal.close()


def _capture(table: Table) -> list[OutboxMessage]:
    """What the runner hands the publisher, as it hands it."""
    captured: list[OutboxMessage] = []
    publish = table.runner.publish_journaled

    def spy(messages: list[OutboxMessage]) -> None:
        captured.extend(messages)
        publish(messages)

    table.runner.publish_journaled = spy  # type: ignore[assignment]
    return captured


async def test_every_message_of_a_round_is_on_the_wire_before_the_loop_turns(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    async with wired_table(tmp_path, mosquitto.url) as table:
        prefix = table.runner.messages.envelope.prefix
        with thread_subscriber(mosquitto.port, f"{prefix}/#") as sub:
            captured = _capture(table)
            leaves: set[str] = set()
            for inp in session(2):
                captured.clear()
                assert table.runner.handle(inp)
                if not captured:
                    continue
                # The event loop is held here: only what handle() itself wrote can arrive.
                assert sub.wait_for([m.id for m in captured]), [m.topic for m in captured]
                leaves.update(m.topic.rsplit("/", 1)[1] for m in captured)
                await asyncio.wait_for(table.publisher.drained(), WAIT_S)
            assert leaves == {"events", "rounds"}
            assert table.runner.journal.outbox_depth() == 0


async def test_with_work_of_its_own_the_drain_keeps_the_outbox_order(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """A drain already woken has messages before these: they wait their turn."""
    async with wired_table(tmp_path, mosquitto.url) as table:
        prefix = table.runner.messages.envelope.prefix
        journal = table.runner.journal
        env = table.runner.messages.envelope
        with thread_subscriber(mosquitto.port, f"{prefix}/events") as sub:
            earlier = [_event(env, seq) for seq in range(1, 31)]
            journal.enqueue(earlier)
            table.publisher.wake()
            later = [_event(env, 31)]
            journal.enqueue(later)
            table.publisher.publish_now(later)
            await asyncio.wait_for(table.publisher.drained(), WAIT_S)
            everything = [m.id for m in earlier + later]
            assert await asyncio.to_thread(sub.wait_for, everything)
            assert sub.ids == everything
            assert journal.outbox_depth() == 0


async def test_a_message_whose_puback_never_comes_goes_again_on_the_next_connection(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """Published by publish_now, its PUBACK held back, then the connection cut: the
    loss is one with a message in flight, and the message goes again (same id)."""
    async with relay_to(mosquitto.port) as relay, wired_table(tmp_path, relay.url) as table:
        prefix = table.runner.messages.envelope.prefix
        journal = table.runner.journal
        with thread_subscriber(mosquitto.port, f"{prefix}/events") as sub:
            relay.replies.clear()
            msg = _event(table.runner.messages.envelope, 1)
            journal.enqueue([msg])
            table.publisher.publish_now([msg])
            assert [m.id for m, _ in table.publisher._express] == [msg.id]
            assert await asyncio.to_thread(sub.wait_for, [msg.id])  # it went out
            relay.cut()
            relay.replies.set()
            async with asyncio.timeout(WAIT_S):
                while sub.ids.count(msg.id) < 2:
                    await asyncio.to_thread(sub.wait_for_more, len(sub.ids))
            await asyncio.wait_for(table.publisher.drained(), WAIT_S)
            assert table.publisher.connects == 2
            assert journal.outbox_depth() == 0


async def test_a_refused_message_held_back_keeps_publish_now_out_of_the_way(
    tmp_path: Path, acl_mosquitto: MosquittoBroker
) -> None:
    """While a refused message waits for its retry, the drain alone says what goes next:
    its retry time is the wall clock's, which can step past it while the drain sleeps."""
    async with wired_table(tmp_path, acl_mosquitto.url) as table:
        journal = table.runner.journal
        env = table.runner.messages.envelope
        refused = env.alert(alert_body(), ts=datetime.now(UTC))
        journal.enqueue([refused])
        table.publisher.wake()
        async with asyncio.timeout(WAIT_S):
            while not journal.refusals():
                await table.publisher.drained()
        await asyncio.wait_for(table.publisher.drained(), WAIT_S)
        # The wall clock steps past the retry while the drain sleeps until it.
        journal._db.execute("UPDATE outbox SET retry_at = 0 WHERE id = ?", (refused.id,))
        later = _event(env, 1)
        journal.enqueue([later])
        table.publisher.publish_now([later])
        assert table.publisher._express == []
        await asyncio.wait_for(table.publisher.drained(), WAIT_S)
        # Offered again, in its turn before the later message (the table's own alert
        # about the refusal, on the same refused topic, waits too).
        counts = {r.message.id: r.count for r in journal.refusals()}
        assert counts[refused.id] == 2
        assert journal.outbox_depth() == len(counts)


def _event(env: Envelope, seq: int) -> OutboxMessage:
    return env.event(
        {
            "seq": seq,
            "epoch": "epoch-1",
            "round_id": 1,
            "type": "dealer_changed",
            "dealer": f"D-{seq}",
        },
        ts=datetime.now(UTC),
    )
