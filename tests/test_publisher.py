"""The publisher against a real Mosquitto: topics, order across an outage, refusals, the
last will, a clean shutdown and a duplicate table identity."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from table_controller.feed.payloads import (
    TOPIC_RULES,
    TableStatus,
    Topic,
    parse_payload,
)
from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.config import MqttSection
from table_controller.service.envelope import Envelope
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.publisher import (
    IDENTITY_CONFLICT_RETRY_S,
    PEER_CLOSES_FOR_CONFLICT,
    POISON_LOSSES,
    Publisher,
)

TABLE = "war-07"
SITE = "main-floor"
PREFIX = f"casino/{SITE}/table/{TABLE}"
ENV = Envelope(table=TABLE, site=SITE, prefix=PREFIX)
WAIT_S = 10.0


# -- helpers: payloads --------------------------------------------------------------


def now() -> datetime:
    return datetime.now(UTC)


def status_model(*, online: bool = True, ts: datetime | None = None) -> TableStatus:
    ok = {"state": "ok", "detail": None}
    return TableStatus.model_validate(
        {
            **ENV.fields(ts=ts or now()),
            "online": online,
            "version": "0.1.0",
            "rules": "ny",
            "decks": 6,
            "positions": 7,
            "devices": {"shoe": ok, "sensors": ok, "console": ok},
            "outbox": {"depth": 0, "oldest_age_s": None},
        }
    )


def status_message(*, online: bool = True) -> OutboxMessage:
    return ENV.message(status_model(online=online))


def event_message(seq: int, *, epoch: str = "epoch-1") -> OutboxMessage:
    return ENV.event(
        {
            "seq": seq,
            "epoch": epoch,
            "round_id": 1,
            "type": "dealer_changed",
            "dealer": f"D-{seq}",
        },
        ts=now(),
    )


def alert_message(alert: str = "a-1") -> OutboxMessage:
    return ENV.alert(
        {
            "alert": alert,
            "code": "LATE_WAGER",
            "severity": "warning",
            "message": "chips added on a non-playing position after the latch",
            "round_id": 1,
            "position": 3,
            "spot": "initial",
            "resolved_by": None,
        },
        ts=now(),
    )


def ids(messages: list[OutboxMessage]) -> list[str]:
    return [m.id for m in messages]


# -- helpers: the real parts ------------------------------------------------------------


@dataclass
class Received:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    content_type: str | None

    @property
    def id(self) -> str:
        value = json.loads(self.payload)["id"]
        assert isinstance(value, str)
        return value

    @property
    def body(self) -> dict[str, Any]:
        value = json.loads(self.payload)
        assert isinstance(value, dict)
        return value


class Subscriber:
    """A real MQTT 5 client subscribed to the table's topics, keeping retain flags."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self._messages = client.messages

    async def next(self, within: float = WAIT_S) -> Received:
        msg = await asyncio.wait_for(anext(self._messages), within)
        props = msg.properties
        assert isinstance(msg.payload, bytes)
        return Received(
            topic=msg.topic.value,
            payload=msg.payload,
            qos=msg.qos,
            retain=msg.retain,
            content_type=getattr(props, "ContentType", None),
        )

    async def take(self, count: int, within: float = WAIT_S) -> list[Received]:
        return [await self.next(within) for _ in range(count)]

    async def take_unique(self, count: int, within: float = WAIT_S) -> list[Received]:
        """``count`` messages, dropping resends by their ``id`` as the feed tells subscribers."""
        seen: dict[str, Received] = {}
        async with asyncio.timeout(within):
            while len(seen) < count:
                got = await self.next(within)
                seen.setdefault(got.id, got)
        return list(seen.values())

    async def until(
        self, predicate: Callable[[Received], bool], within: float = WAIT_S
    ) -> Received:
        async with asyncio.timeout(within):
            while True:
                got = await self.next(within)
                if predicate(got):
                    return got


@contextlib.asynccontextmanager
async def subscribed(
    port: int, topic: str = f"{PREFIX}/#", *, retained: bool = False
) -> AsyncIterator[Subscriber]:
    """Live messages only, unless ``retained``: then first what the broker retained."""
    client = aiomqtt.Client(
        "127.0.0.1",
        port,
        identifier=f"test-sub-{uuid.uuid4().hex[:8]}",
        protocol=aiomqtt.ProtocolVersion.V5,
    )
    async with client:
        options = SubscribeOptions(
            qos=2, retainAsPublished=True, retainHandling=0 if retained else 2
        )
        await client.subscribe(topic, options=options)
        yield Subscriber(client)


class TcpRelay:
    """A TCP relay between a client and the broker that a test can cut or gate.

    Cutting aborts both sockets (a reset, no MQTT DISCONNECT): to the broker the
    client died. With the gate closed, new connections are accepted and dropped
    at once, so the client cannot reach the broker.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.open = True
        self._server: asyncio.Server | None = None
        self._transports: set[asyncio.WriteTransport] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if not self.open:
                writer.transport.abort()
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(
                    "127.0.0.1", self.upstream_port
                )
            except OSError:
                writer.transport.abort()
                return
            pair = (writer.transport, up_writer.transport)
            self._transports.update(pair)
            try:
                await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
            finally:
                for transport in pair:
                    transport.abort()
                    self._transports.discard(transport)
        finally:
            self._tasks.discard(task)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.transport.abort()

    def cut(self) -> None:
        for transport in list(self._transports):
            transport.abort()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        self.cut()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def relay_to(port: int) -> AsyncIterator[TcpRelay]:
    relay = TcpRelay(port)
    await relay.start()
    try:
        yield relay
    finally:
        await relay.close()


class LogWatch(logging.Handler):
    """Log records of one logger, with a way to wait for one to appear."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self._loop.call_soon_threadsafe(self._changed.set)

    def matching(self, level: int, text: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.levelno == level and text in r.getMessage()]

    async def wait(self, level: int, text: str, count: int = 1, within: float = WAIT_S) -> None:
        async with asyncio.timeout(within):
            while len(self.matching(level, text)) < count:
                self._changed.clear()
                await self._changed.wait()


@contextlib.contextmanager
def watching(name: str = "table_controller.service.publisher") -> Iterator[LogWatch]:
    logger = logging.getLogger(name)
    watch = LogWatch()
    old_level = logger.level
    logger.addHandler(watch)
    logger.setLevel(logging.DEBUG)
    try:
        yield watch
    finally:
        logger.removeHandler(watch)
        logger.setLevel(old_level)


@dataclass
class Table:
    """A publisher with its journal, as the service wires it."""

    journal: Journal
    publisher: Publisher
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    wills: list[OutboxMessage] = field(default_factory=list)
    statuses: list[OutboxMessage] = field(default_factory=list)
    refused: list[tuple[OutboxMessage, int]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    conflict: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def publish(self, *messages: OutboxMessage) -> None:
        self.journal.enqueue(list(messages))
        self.publisher.wake()

    async def drained(self) -> None:
        await asyncio.wait_for(self.publisher.drained(), WAIT_S)

    async def wait_connected(self) -> None:
        await asyncio.wait_for(self.connected.wait(), WAIT_S)


@contextlib.asynccontextmanager
async def running_table(
    path: Path,
    url: str,
    *,
    client_id: str = TABLE,
    protocol: str = "5",
    ca_file: Path | None = None,
    username: str | None = None,
    password_file: Path | None = None,
    status_on_connect: bool = False,
    journal_kwargs: dict[str, Any] | None = None,
    **publisher_kwargs: Any,
) -> AsyncIterator[Table]:
    journal = Journal(path, **(journal_kwargs or {}))
    holder: list[Table] = []

    def will() -> OutboxMessage:
        msg = ENV.last_will(status_model(), ts=now())
        holder[0].wills.append(msg)
        return msg

    def on_connect() -> None:
        table = holder[0]
        if status_on_connect:
            table.statuses.append(status_message())
            table.journal.enqueue([table.statuses[-1]])
            table.publisher.wake()
        table.connected.set()

    def on_refused(msg: OutboxMessage, code: int) -> None:
        holder[0].refused.append((msg, code))

    def on_conflict(detail: str) -> None:
        holder[0].conflicts.append(detail)
        holder[0].conflict.set()

    publisher_kwargs.setdefault("retry_initial_s", 0.05)
    publisher_kwargs.setdefault("retry_max_s", 0.2)
    publisher = Publisher(
        MqttSection(
            url=url,
            protocol=protocol,  # type: ignore[arg-type]
            keepalive_s=5,
            ca_file=ca_file,
            username=username,
            password_file=password_file,
        ),
        client_id=client_id,
        journal=journal,
        will=will,
        on_connect=on_connect,
        on_refused=on_refused,
        on_identity_conflict=on_conflict,
        **publisher_kwargs,
    )
    table = Table(journal=journal, publisher=publisher)
    holder.append(table)
    table.task = asyncio.create_task(publisher.run(), name=f"publisher-{client_id}")
    try:
        yield table
    finally:
        table.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await table.task
        journal.close()


# -- tests -----------------------------------------------------------------------------


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


def state_message(round_id: int) -> OutboxMessage:
    return ENV.state(
        {
            "phase": "betting",
            "round_id": round_id,
            "held": False,
            "dealer": "D-114",
            "shoe": {"id": "shoe-1", "cards_read": 12, "cover_seen": False},
            "positions": [],
            "dealer_cards": [],
            "burn_cards": 0,
        },
        ts=now(),
    )


async def test_a_view_goes_from_memory_after_the_journal_and_only_its_latest(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """The retained views are not journaled: the latest one shown goes out, after the
    journal's messages (a state shows what the events before it say)."""
    async with (
        subscribed(mosquitto.port) as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        await table.wait_connected()
        await table.drained()
        older, latest, event = state_message(5), state_message(6), event_message(1)
        # All in one step of the event loop, as an input and the views after it.
        table.publisher.show(older)
        table.publisher.show(latest)
        table.publish(event)
        got = await sub.take(2)
        await table.drained()
        assert [g.id for g in got] == [event.id, latest.id]
        assert table.journal.outbox_depth() == 0
        assert table.journal.pending(100) == []
        kinds = {row[0] for row in table.journal._db.execute("SELECT kind FROM outbox")}
        assert kinds == {"events"}


async def test_a_view_acknowledged_writes_nothing_to_the_journal(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """A view has no row in the outbox: its PUBACK opens no transaction (one per input
    was a transaction for nothing)."""
    async with (
        subscribed(mosquitto.port) as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        await table.wait_connected()
        await table.drained()
        statements: list[str] = []
        table.journal._db.set_trace_callback(statements.append)
        view = state_message(7)
        table.publisher.show(view)
        got = await sub.take(1)
        await table.drained()
        table.journal._db.set_trace_callback(None)
        assert [g.id for g in got] == [view.id]
        writes = [s for s in statements if s.split()[0].upper() in {"BEGIN", "UPDATE", "INSERT"}]
        assert writes == []


async def test_a_view_in_flight_when_the_connection_breaks_goes_again(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """A view is held in memory only: sent into a broken connection, it is sent again
    on the next one (and the break is a lost connection, not a refusal)."""
    async with (
        subscribed(mosquitto.port) as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        await table.wait_connected()
        await table.drained()
        connection = table.publisher._client
        assert connection is not None
        sock = connection._client.socket()
        assert isinstance(sock, socket.socket)
        table.connected.clear()
        # In one step of the event loop: the connection breaks, then a view is shown;
        # the drain writes it into the broken socket before the loop notices.
        sock.shutdown(socket.SHUT_RDWR)
        view = state_message(7)
        table.publisher.show(view)
        await table.wait_connected()
        got = await sub.until(lambda r: r.id == view.id)
        assert got.payload == view.payload
        assert table.refused == []


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
