"""The publisher: drains the journal's outbox to the MQTT broker (``docs/feed.md``).

The service never awaits a publish: it commits messages to the outbox and
calls :meth:`Publisher.publish_now` (which puts them on the wire at once when
the drain is caught up) or :meth:`Publisher.wake`. :meth:`Publisher.run` connects, publishes every
pending message in order, marks each one sent when the broker acknowledged
it, waits for the next wake-up, and reconnects with capped, jittered backoff
whenever the connection goes, for as long as the service runs.

* MQTT 5 by default, ``content-type: application/json`` on every publish.
  ``protocol = "3.1.1"`` works but logs a WARNING: such a broker acknowledges a
  denied publish as if it had succeeded.
* The last will is the retained ``status`` with ``online: false``, built at
  each connect (its ``ts`` is the time of that connect); under MQTT 5 it waits
  a few seconds for a reconnect to the session (``mqtt_client.py``). A clean
  shutdown sends the final status (through the outbox, and waits for the drain; or
  :meth:`Publisher.publish_final` while connected), then cancels :meth:`Publisher.run`,
  which disconnects cleanly (the broker drops the will), or, when the final status
  was not acknowledged (:meth:`Publisher.leave_will`), with reason 0x04, so that the
  broker publishes the will.
* What the journal cannot take while it faults (docs/rules.md ``JOURNAL_FAULT``) is
  offered from memory (:meth:`Publisher.offer`), ahead of the outbox.

The parts: ``mqtt_client.py`` (aiomqtt, keeping PUBACK reason codes),
``publisher_drain.py`` (the in-flight window, refusals, subscriptions) and
``publisher_links.py`` (back-off and duplicate identities).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import ssl
import time
from collections.abc import Callable
from typing import Final

import aiomqtt
import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from table_controller.feed.broker import (
    DEFAULT_PORT,
    DEFAULT_TLS_PORT,
    BrokerAddress,
    BrokerConfigError,
    parse_broker_url,
    read_password,
    tls_context,
)
from table_controller.service.config import MqttSection
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.mqtt_client import (
    CONNECT_TIMEOUT_S,
    AckingClient,
    ConnectionLost,
    connect,
    disconnect,
    properties,
    reason_name,
    session_properties,
)
from table_controller.service.publisher_drain import MAX_IN_FLIGHT, Drain
from table_controller.service.publisher_links import (
    IDENTITY_CONFLICT_RETRY_S,
    PEER_CLOSES_FOR_CONFLICT,
    RETRY_INITIAL_S,
    RETRY_MAX_S,
)
from table_controller.service.publisher_refusals import POISON_LOSSES, REFUSAL_MIN

# The broker address, TLS and password code lives in feed/broker.py (one implementation
# for the table, the pit display, the recorder and the rigs); these names stay importable here.
PublisherConfigError = BrokerConfigError
__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_TLS_PORT",
    "BrokerAddress",
    "Publisher",
    "PublisherConfigError",
    "parse_broker_url",
    "read_password",
    "tls_context",
]

log = logging.getLogger(__name__)
# paho's own protocol log (every packet at DEBUG; socket errors at ERROR, which
# this module reports once, in its own words). Lower its level to trace.
PAHO_LOG: Final = logging.getLogger(f"{__name__}.paho")
PAHO_LOG.setLevel(logging.CRITICAL)


def _noop() -> None:
    return None


def _noop_refused(msg: OutboxMessage, reason_code: int) -> None:
    return None


def _noop_conflict(detail: str) -> None:
    return None


class Publisher(Drain):
    """Publishes the journal's outbox; reconnects forever; never blocks the game."""

    def __init__(
        self,
        mqtt: MqttSection,
        *,
        client_id: str,
        journal: Journal,
        will: Callable[[], OutboxMessage],
        on_connect: Callable[[], None] = _noop,
        on_refused: Callable[[OutboxMessage, int], None] = _noop_refused,
        on_identity_conflict: Callable[[str], None] = _noop_conflict,
        subscriptions: tuple[str, ...] = (),
        on_message: Callable[[str, bytes], None] | None = None,
        retry_initial_s: float = RETRY_INITIAL_S,
        retry_max_s: float = RETRY_MAX_S,
        identity_conflict_retry_s: float = IDENTITY_CONFLICT_RETRY_S,
        ack_timeout_s: float | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not client_id:
            raise PublisherConfigError("client id: empty")
        if not 0 < retry_initial_s <= retry_max_s:
            raise ValueError("retry: need 0 < retry_initial_s <= retry_max_s")
        self.address = parse_broker_url(mqtt.url)
        self.client_id = client_id
        self._mqtt = mqtt
        self._journal = journal
        self._will = will
        self._on_connect = on_connect
        self._on_refused = on_refused
        self._on_identity_conflict = on_identity_conflict
        # docs/feed.md: the table reads its own ack and replay (and its own retained status).
        self._subscriptions = subscriptions
        self._on_message = on_message
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._conflict_retry_s = identity_conflict_retry_s
        # A fallback for a broker that answers pings but never acknowledges: longer
        # than paho's keepalive takes to find a half-open link (a ping after a
        # keepalive of silence, given up a keepalive later, checked once a second).
        self._ack_timeout_s = ack_timeout_s or max(10.0, 3.0 * mqtt.keepalive_s)
        self._rng = rng or random.Random()
        self._v5 = mqtt.protocol == "5"
        self._password = None if mqtt.password_file is None else read_password(mqtt.password_file)
        self._tls: ssl.SSLContext | None = None
        if self.address.tls:
            self._tls = tls_context(mqtt.ca_file)
        elif mqtt.ca_file is not None:
            log.warning("mqtt.ca_file is set but mqtt.url %s is not mqtts://: no TLS", mqtt.url)
        if not self._v5:
            # docs/feed.md: a 3.1.1 broker acknowledges a publish its access rules
            # denied as if it had succeeded.
            log.warning(
                "MQTT 3.1.1 (mqtt.protocol): the broker cannot report refused publishes; "
                "a publish its access rules deny is lost without notice"
            )
        self._publish_props = properties(PacketTypes.PUBLISH, v5=self._v5)
        self._will_props = properties(PacketTypes.WILLMESSAGE, v5=self._v5)
        self._connect_props: Properties | None = None
        if self._will_props is not None:
            self._connect_props, self._will_props.WillDelayInterval = session_properties()

        self.connected = False
        self.identity_conflict = False
        self.retry_delay_s = 0.0
        self.connects = 0
        self._client: AckingClient | None = None
        self._wake_fut: asyncio.Future[None] | None = None
        self._woken = False
        # Published by publish_now, their PUBACKs not yet settled by the drain.
        self._express: list[tuple[OutboxMessage, asyncio.Future[int]]] = []
        self._held_back = False
        self._idle = asyncio.Event()
        self._closing = False
        # At a stop whose final status the broker did not acknowledge: the last disconnect
        # asks the broker to publish the will, so the table is not left "online".
        self._will_on_close = False
        self._up_since: float | None = None
        self._peer_closes = 0
        self._reported_down = False
        # After a loss with messages in flight: how many to send one at a time,
        # and the message that was alone in flight at the last losses.
        self._careful = 0
        self._lost_sending = False
        self._suspect: str | None = None
        self._suspect_losses = 0
        # Messages the journal cannot take (docs/rules.md JOURNAL_FAULT): sent from memory,
        # ahead of the outbox, once; the latest per retained topic.
        self._unjournaled: dict[str, OutboxMessage] = {}
        # The retained views (state, stats): rebuilt from the engine at any start, so
        # never journaled; the latest per topic, sent after what the journal holds.
        self._views: dict[str, OutboxMessage] = {}
        self._from_memory: set[str] = set()
        self._unmarked: set[str] = set()
        self._held: dict[str, tuple[int, float]] = {}
        self._refused_topics: set[str] = set()
        self._reconnect_now = asyncio.Event()

    # -- the service's side ----------------------------------------------------

    def halt(self) -> None:
        """Publish nothing more from the outbox (this controller yields its table)."""
        self._closing = True
        self.wake()

    def subscribe(self, topics: tuple[str, ...]) -> None:
        """Read these topics (at the next connect) and hand what arrives to ``on_message``."""
        self._subscriptions = topics

    def reconnect_now(self) -> None:
        """docs/feed.md, one controller per table: the other one yields, so the long back-off
        of a suspected identity conflict ends now."""
        if self.identity_conflict:
            log.info("the other controller of this table yields: reconnecting now")
        self.identity_conflict = False
        self._peer_closes = 0
        self._reconnect_now.set()

    def show(self, msg: OutboxMessage) -> None:
        """Send the retained view ``msg`` from memory, after the journal's messages; it
        replaces one not sent yet on its topic. A connection lost first loses it: the
        next connect sends the views again (``TableRunner.on_broker_connect``)."""
        self._views[msg.topic] = msg
        self.wake()

    def offer(self, msg: OutboxMessage) -> None:
        """Send ``msg`` without the journal (it cannot commit); a retained one replaces
        the one before it on its topic."""
        self._unjournaled[msg.topic if msg.retain else msg.id] = msg
        self.wake()

    async def drained(self) -> None:
        """Wait until the publisher, connected, has found nothing left to send.

        Refused messages waiting for their retry do not count (see ``journal.py``).
        """
        await self._idle.wait()

    def leave_will(self) -> None:
        """The final status was not acknowledged: end the connection so that the broker
        publishes the last will (``online: false``) instead of discarding it."""
        self._will_on_close = True

    async def publish_final(self, msg: OutboxMessage, timeout_s: float) -> bool:
        """At a clean shutdown: publish ``msg`` (status ``online: false``) now.

        From here on :meth:`run` takes nothing more from the outbox; cancel it
        next, which disconnects cleanly (so the broker drops the last will).
        Returns True when the broker acknowledged ``msg``; it is then marked
        sent if it is in the outbox.
        """
        client = self._client
        if client is None or not self.connected:
            return False
        self._closing = True
        try:
            async with asyncio.timeout(timeout_s):
                code = await self._ack(client, client.publish_nowait(msg, self._publish_props))
        except (TimeoutError, ConnectionLost, aiomqtt.MqttError) as exc:
            log.warning("final status not published: %s", exc or type(exc).__name__)
            return False
        if code >= REFUSAL_MIN:
            log.warning("final status refused by the broker: %s", reason_name(code))
            return False
        self._mark_sent([msg.id])
        return True

    # -- the connection loop ----------------------------------------------------

    async def run(self) -> None:
        """Connect, drain, wait, reconnect; returns only when cancelled."""
        failed_attempts = 0
        self._closing = False
        while True:
            client = self._new_client()
            first_try = failed_attempts == 0
            self._lost_sending = False
            error: BaseException | None = None
            up = False
            try:
                await connect(client)
                up = True
                try:
                    self._connected(client)
                    await self._serve(client)
                finally:
                    await disconnect(client, with_will=self._will_on_close)
            except (aiomqtt.MqttError, ConnectionLost) as exc:
                error = exc
            finally:
                lived = self._went_down(client)
            if up:
                failed_attempts = 0
                delay = self._after_loss(client, lived, first_try, error)
            else:
                failed_attempts += 1
                self._peer_closes = 0
                self._log_failed_connect(error, failed_attempts)
                delay = self._backoff(failed_attempts)
            self.retry_delay_s = delay
            self._reconnect_now.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._reconnect_now.wait()

    def _new_client(self) -> AckingClient:
        will: aiomqtt.Will | None = None
        try:
            msg = self._will()
        except Exception:
            log.exception("could not build the last will; connecting without one")
        else:
            will = aiomqtt.Will(
                topic=msg.topic,
                payload=msg.payload,
                qos=msg.qos,
                retain=msg.retain,
                properties=self._will_props,
            )
        return AckingClient(
            self.address.host,
            self.address.port,
            username=self._mqtt.username,
            password=self._password,
            identifier=self.client_id,
            protocol=aiomqtt.ProtocolVersion.V5 if self._v5 else aiomqtt.ProtocolVersion.V311,
            will=will,
            clean_session=None if self._v5 else True,
            clean_start=False if self._v5 else paho.MQTT_CLEAN_START_FIRST_ONLY,
            properties=self._connect_props,
            keepalive=self._mqtt.keepalive_s,
            timeout=CONNECT_TIMEOUT_S,
            tls_context=self._tls,
            logger=PAHO_LOG,
            # A card's event goes out at once, not held back behind an earlier
            # message's TCP acknowledgement (Nagle): as the broker's set_tcp_nodelay.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )

    def _connected(self, client: AckingClient) -> None:
        self._client = client
        self.connected = True
        self.connects += 1
        self.retry_delay_s = 0.0
        self._up_since = time.monotonic()
        if self._reported_down or self.connects == 1:
            log.info(
                "connected to the broker at %s:%d as %r",
                self.address.host,
                self.address.port,
                self.client_id,
            )
        self._reported_down = False
        self._call(self._on_connect)

    def _went_down(self, client: AckingClient) -> float:
        client.forget_disconnect_error()
        # Not marked sent: the outbox still holds them, and the next connection sends them.
        self._express = []
        self._client = None
        self.connected = False
        lived = 0.0 if self._up_since is None else time.monotonic() - self._up_since
        self._up_since = None
        return lived

    # -- draining ----------------------------------------------------------------


__all__ = [
    "IDENTITY_CONFLICT_RETRY_S",
    "MAX_IN_FLIGHT",
    "PEER_CLOSES_FOR_CONFLICT",
    "POISON_LOSSES",
    "BrokerAddress",
    "Publisher",
    "PublisherConfigError",
    "parse_broker_url",
    "read_password",
    "reason_name",
    "tls_context",
]
