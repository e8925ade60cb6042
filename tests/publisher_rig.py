"""What the publisher's tests run against a real Mosquitto: the table's messages, a
subscriber that keeps retain flags, a log watch, and a publisher with its journal wired
as the service wires it; and tests/tcp_relay.py's relay, which a test can cut."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from table_controller.feed.payloads import TableStatus
from table_controller.service.config import MqttSection
from table_controller.service.envelope import Envelope
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.publisher import Publisher
from tests.tcp_relay import TcpRelay as TcpRelay
from tests.tcp_relay import relay_to as relay_to

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


def alert_body(alert: str = "a-1") -> dict[str, Any]:
    """An alert's own fields (a late wager), for any table's envelope."""
    return {
        "alert": alert,
        "code": "LATE_WAGER",
        "severity": "warning",
        "message": "chips added on a non-playing position after the latch",
        "round_id": 1,
        "position": 3,
        "spot": "initial",
        "resolved_by": None,
    }


def alert_message(alert: str = "a-1") -> OutboxMessage:
    return ENV.alert(alert_body(alert), ts=now())


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
