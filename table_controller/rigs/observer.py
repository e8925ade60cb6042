"""An MQTT subscriber that keeps every message of one table, for rigs and tests.

Each message is kept with the time it arrived (the event loop's clock), so that
a rig can time what the controller took to publish what the rig caused.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from table_controller.feed.broker import cancel_until_ended, parse_broker_url
from table_controller.rigs.errors import RigUnavailable

WAIT_S: Final = 10.0


@dataclass(frozen=True, slots=True)
class BrokerLogin:
    """How an observer logs in: an account and its password, and TLS for mqtts://."""

    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: ssl.SSLContext | None = field(default=None, repr=False)


OBSERVER_SESSION_EXPIRY_S: Final = 3600


class Observer:
    """An MQTT subscriber to one table's topics that keeps every message, duplicates dropped.

    ``wait(predicate)`` waits, under a timeout, until the messages seen satisfy it.
    """

    def __init__(
        self,
        broker_url: str,
        topic_filter: str,
        *,
        protocol: str = "5",
        session: str | None = None,
        login: BrokerLogin | None = None,
    ) -> None:
        self.broker = parse_broker_url(broker_url)
        # A deployed broker's account and TLS (rig.toml); none on a loopback test broker.
        self.login = login or BrokerLogin()
        self.topic_filter = topic_filter
        # A named session (MQTT 5) outlives the connection, and a broker restart when the
        # broker keeps sessions on disk: what is published meanwhile waits for the observer.
        self.session = session
        # MQTT 5 as the table publishes; "3.1.1" for a broker without 5 (the demo's amqtt).
        self.protocol = (
            aiomqtt.ProtocolVersion.V311 if protocol == "3.1.1" else aiomqtt.ProtocolVersion.V5
        )
        self.by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.ids: set[str] = set()
        self.duplicates = 0
        self._arrived: dict[int, float] = {}
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self.last_error: aiomqtt.MqttCodeError | None = None

    def last(self, topic: str) -> dict[str, Any] | None:
        msgs = self.by_topic.get(topic)
        return msgs[-1] if msgs else None

    def arrival(self, message: dict[str, Any]) -> float:
        """When ``message`` (one of those kept) arrived, on the event loop's clock."""
        return self._arrived[id(message)]

    def of(self, topic: str) -> list[dict[str, Any]]:
        return self.by_topic.get(topic, [])

    async def start(self, timeout: float = WAIT_S) -> None:
        self._task = asyncio.create_task(self._run(), name="observer")
        try:
            async with asyncio.timeout(timeout):
                await self._subscribed.wait()
        except TimeoutError:
            if self.last_error is None:
                raise
            # The broker answered: say what it said (a wrong secret is no silent broker).
            where = f"{self.broker.host}:{self.broker.port}"
            raise RigUnavailable(f"the broker at {where} refused: {self.last_error}") from None

    async def close(self) -> None:
        if self._task is not None:
            await cancel_until_ended(self._task)
            self._task = None

    def _new_client(self) -> aiomqtt.Client:
        return aiomqtt.Client(
            self.broker.host,
            self.broker.port,
            protocol=self.protocol,
            username=self.login.username,
            password=self.login.password,
            tls_context=self.login.tls,
            **self._session_options(),
        )

    async def _run(self) -> None:
        while True:
            try:
                async with self._new_client() as client:
                    await client.subscribe(self.topic_filter, qos=1)
                    self._subscribed.set()
                    async for message in client.messages:
                        await self._take(str(message.topic), message.payload)
            except aiomqtt.MqttError as exc:
                # The broker went away (a test stopped it): subscribe again when it is back.
                # One that answered with a refusal (the login) is remembered for start().
                if isinstance(exc, aiomqtt.MqttCodeError):
                    self.last_error = exc
                await asyncio.sleep(0.2)

    def _session_options(self) -> dict[str, Any]:
        if self.session is None:
            return {}
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = OBSERVER_SESSION_EXPIRY_S
        return {"identifier": self.session, "clean_start": False, "properties": props}

    async def _take(self, topic: str, payload: Any) -> None:
        if not isinstance(payload, bytes | bytearray):
            return
        try:
            body = json.loads(payload)
        except ValueError:
            return
        msg_id = body.get("id")
        if msg_id in self.ids:
            self.duplicates += 1
            return
        if msg_id is not None:
            self.ids.add(msg_id)
        self.by_topic[topic.rsplit("/", 1)[-1]].append(body)
        self._arrived[id(body)] = asyncio.get_running_loop().time()
        async with self._changed:
            self._changed.notify_all()

    async def wait(self, predicate: Callable[[Observer], bool], timeout: float = WAIT_S) -> None:
        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: predicate(self))
        except TimeoutError:
            raise TimeoutError(f"not seen within {timeout} s; {self.summary()}") from None

    def summary(self) -> str:
        counts = {topic: len(msgs) for topic, msgs in self.by_topic.items()}
        events = [(e["seq"], e["type"]) for e in self.of("events")[-12:]]
        return (
            f"messages per topic {counts}; last events {events}; "
            f"last state {self.last('state')}; last alerts {self.of('alerts')[-3:]}"
        )
