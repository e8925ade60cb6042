"""The publisher: drains the journal's outbox to the MQTT broker (``MQTT.md``).

The service never awaits a publish: it commits messages to the outbox and
calls :meth:`Publisher.wake`. :meth:`Publisher.run` connects, publishes every
pending message in order, marks each one sent when the broker acknowledged
it, waits for the next wake-up, and reconnects with capped, jittered backoff
whenever the connection goes, for as long as the service runs.

* MQTT 5 by default, ``content-type: application/json`` on every publish. A
  PUBACK reason code of 0x80 or above is a refusal: the message stays in the
  outbox (held back for a while, see ``journal.py``) and ``on_refused`` fires
  once per message id. ``protocol = "3.1.1"`` works but logs a WARNING: such
  a broker acknowledges a denied publish as if it had succeeded.
* A broker that refuses a message by dropping the connection (a packet
  above its size limit, say) cannot block the outbox: a DISCONNECT naming
  such a reason refuses the message at the head of the in-flight window; a
  plain drop makes the next connection send one message at a time, and a
  message alone in flight at ``POISON_LOSSES`` drops in a row counts as
  refused. Refused messages are held back and retried (``journal.py``).
* Up to ``MAX_IN_FLIGHT`` messages (or the broker's Receive Maximum) are in
  flight at once; PUBACKs come back in order, and each batch is marked sent
  in one journal transaction.
* The last will is the retained ``status`` with ``online: false``, built at
  each connect (its ``ts`` is the time of that connect). A clean shutdown
  calls :meth:`Publisher.publish_final` while connected, then cancels
  :meth:`Publisher.run`, which disconnects cleanly (the broker drops the will).
* A duplicate table identity (another client connecting with our client id)
  is reported once through ``on_identity_conflict`` and a logged ERROR, and
  the publisher then retries only every ``identity_conflict_retry_s`` instead
  of fighting for the session. A broker that says so (DISCONNECT 0x8E,
  "session taken over") is believed at once; a broker that just closes the
  connection (Mosquitto 2.0.11 does) is suspected after
  ``PEER_CLOSES_FOR_CONFLICT`` closes in a row of connections that each came
  up at the first attempt, since a broker that is away refuses the reconnect.

aiomqtt (>=2.5,<3) stays inside this module. aiomqtt's ``publish()`` drops the
PUBACK reason code that paho-mqtt 2.x hands to its ``on_publish`` callback, so
:class:`_AckingClient` overrides the paho callbacks aiomqtt registers
(``_on_publish``, ``_on_connect``, ``_on_disconnect``) to keep the reason
codes, and publishes through paho's public ``publish()`` on the client aiomqtt
wraps (``_client``) to learn each message's packet id. It watches aiomqtt's
``_disconnected`` and ``_connected`` futures to notice a lost connection while
idle and one closed before its CONNACK. The tests against Mosquitto (a denied
topic gives PUBACK 0x87) pin this down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import signal
import ssl
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

import aiomqtt
import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

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

# The broker address, TLS and password code lives in feed/broker.py (one implementation
# for the table, the pit display and the rigs); these names stay importable from here.
PublisherConfigError = BrokerConfigError
__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_TLS_PORT",
    "BrokerAddress",
    "Publisher",
    "PublisherConfigError",
    "parse_broker_url",
    "read_password",
    "reason_name",
    "tls_context",
]

log = logging.getLogger(__name__)
# paho's own protocol log (every packet at DEBUG; socket errors at ERROR, which
# this module reports once, in its own words). Lower its level to trace.
PAHO_LOG: Final = logging.getLogger(f"{__name__}.paho")
PAHO_LOG.setLevel(logging.CRITICAL)

CONTENT_TYPE: Final = "application/json"

RETRY_INITIAL_S: Final = 0.5
RETRY_MAX_S: Final = 30.0
IDENTITY_CONFLICT_RETRY_S: Final = 300.0
# A connection that stays up this long is no longer one of a series of take-overs.
STABLE_CONNECTION_S: Final = 60.0
PEER_CLOSES_FOR_CONFLICT: Final = 3
CONNECT_TIMEOUT_S: Final = 10.0
# Messages handed to the connection before waiting for their PUBACKs (paho's
# default, and Mosquitto's default Receive Maximum); a smaller Receive Maximum
# from the broker's CONNACK wins.
MAX_IN_FLIGHT: Final = 20
BATCH: Final = 100

REFUSAL_MIN: Final = 0x80  # MQTT 5: a reason code of 0x80 or above is a failure
SESSION_TAKEN_OVER: Final = 0x8E
IMPLEMENTATION_ERROR: Final = 0x83  # used for a message paho-mqtt refuses to encode
CONNECTION_LOST: Final = 0x80  # paho's "Unspecified error" for a socket closed under it
# DISCONNECT reason codes that refuse the PUBLISH the broker was reading: the
# message at the head of the in-flight window is the one it refused.
MESSAGE_REFUSALS: Final = frozenset({0x87, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B})
# A message alone in flight when the connection dropped this many times in a
# row is taken as refused, so that it cannot block the outbox forever.
POISON_LOSSES: Final = 3
_LOST: Final = -1


def reason_name(code: int, packet: int = PacketTypes.PUBACK) -> str:
    """The MQTT 5 name of a reason code (``0x87 Not authorized``)."""
    names: dict[str, list[int]] = ReasonCode.names.get(code, {})
    name = next((n for n, packets in names.items() if packet in packets), None)
    if name is None:
        name = next(iter(names), "unknown")
    return f"0x{code:02X} {name}"


def _code(reason: ReasonCode | int) -> int:
    return reason if isinstance(reason, int) else int(reason.value)


class _ConnectionLost(Exception):
    """The connection to the broker went while messages were in flight."""


class _AckTimeout(_ConnectionLost):
    """No PUBACK in time: the connection is treated as dead."""


class _AckingClient(aiomqtt.Client):
    """aiomqtt's client, keeping PUBACK reason codes and why the connection closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._acks: dict[int, asyncio.Future[int]] = {}
        self.disconnect_reason: int | None = None
        self.disconnect_from_broker = False
        self.receive_maximum: int | None = None

    @property
    def lost(self) -> asyncio.Future[None]:
        """Done when the connection has gone (valid once connected)."""
        return self._disconnected

    def publish_nowait(
        self, msg: OutboxMessage, properties: Properties | None
    ) -> asyncio.Future[int]:
        """Hand one message to the connection; the future gets its PUBACK reason code."""
        info = self._client.publish(msg.topic, msg.payload, msg.qos, msg.retain, properties)
        if info.rc != paho.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "could not publish")
        fut: asyncio.Future[int] = self._loop.create_future()
        if msg.qos == 0:
            # No PUBACK for QoS 0: handed over is all there is.
            fut.set_result(0)
        else:
            self._acks[info.mid] = fut
        return fut

    def forget_disconnect_error(self) -> None:
        """Mark aiomqtt's disconnect error as seen (else asyncio logs it as never retrieved)."""
        fut = self._disconnected
        if fut.done() and not fut.cancelled():
            fut.exception()

    # -- paho callbacks, as registered by aiomqtt ---------------------------------

    def _on_connect(
        self,
        client: paho.Client,
        userdata: Any,
        flags: paho.ConnectFlags,
        reason_code: ReasonCode,
        properties: Properties | None = None,
    ) -> None:
        receive_maximum = getattr(properties, "ReceiveMaximum", None)
        if isinstance(receive_maximum, int) and receive_maximum > 0:
            self.receive_maximum = receive_maximum
        super()._on_connect(client, userdata, flags, reason_code, properties)

    def _on_publish(
        self,
        client: paho.Client,
        userdata: Any,
        mid: int,
        reason_code: ReasonCode,
        properties: Properties,
    ) -> None:
        fut = self._acks.pop(mid, None)
        if fut is not None and not fut.done():
            fut.set_result(_code(reason_code))
        super()._on_publish(client, userdata, mid, reason_code, properties)

    def _on_disconnect(
        self,
        client: paho.Client,
        userdata: Any,
        flags: paho.DisconnectFlags,
        reason_code: ReasonCode,
        properties: Properties | None = None,
    ) -> None:
        if self.disconnect_reason is None:
            self.disconnect_reason = _code(reason_code)
            self.disconnect_from_broker = bool(flags.is_disconnect_packet_from_server)
        if not self._connected.done():
            # Closed before the CONNACK: aiomqtt would wait out its whole timeout.
            self._connected.set_exception(
                aiomqtt.MqttCodeError(reason_code, "connection closed before CONNACK")
            )
        acks, self._acks = self._acks, {}
        for fut in acks.values():
            if not fut.done():
                fut.set_result(_LOST)
        super()._on_disconnect(client, userdata, flags, reason_code, properties)
        self.forget_disconnect_error()


# Fault injection for the crash tests (tests/security): with this set to a topic leaf
# (``rounds``), the process kills itself (SIGKILL) right after the broker acknowledged
# a message on that leaf and before the outbox marks it sent: the one moment where a
# crash must make the message go again (MQTT.md: at least once, the same id).
# Read once at import: nothing is looked up on the publishing path.
KILL_BEFORE_MARK_ENV: Final = "TABLE_CONTROLLER_KILL_BEFORE_MARK"
_KILL_BEFORE_MARK: Final = os.environ.get(KILL_BEFORE_MARK_ENV)


def _fault_point(batch: list[OutboxMessage], acked: list[str]) -> None:
    leaf = _KILL_BEFORE_MARK
    if leaf and any(m.topic.endswith(f"/{leaf}") for m in batch if m.id in acked):
        os.kill(os.getpid(), signal.SIGKILL)


def _noop() -> None:
    return None


def _noop_refused(msg: OutboxMessage, reason_code: int) -> None:
    return None


def _noop_conflict(detail: str) -> None:
    return None


class Publisher:
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
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._conflict_retry_s = identity_conflict_retry_s
        self._ack_timeout_s = ack_timeout_s or max(10.0, 2.0 * mqtt.keepalive_s)
        self._rng = rng or random.Random()
        self._v5 = mqtt.protocol == "5"
        self._password = None if mqtt.password_file is None else read_password(mqtt.password_file)
        self._tls: ssl.SSLContext | None = None
        if self.address.tls:
            self._tls = tls_context(mqtt.ca_file)
        elif mqtt.ca_file is not None:
            log.warning("mqtt.ca_file is set but mqtt.url %s is not mqtts://: no TLS", mqtt.url)
        if not self._v5:
            # MQTT.md: a 3.1.1 broker acknowledges a publish its access rules
            # denied as if it had succeeded.
            log.warning(
                "MQTT 3.1.1 (mqtt.protocol): the broker cannot report refused publishes; "
                "a publish its access rules deny is lost without notice"
            )
        self._publish_props = self._properties(PacketTypes.PUBLISH)
        self._will_props = self._properties(PacketTypes.WILLMESSAGE)

        self.connected = False
        self.identity_conflict = False
        self.retry_delay_s = 0.0
        self.connects = 0
        self._client: _AckingClient | None = None
        self._wake_fut: asyncio.Future[None] | None = None
        self._woken = False
        self._idle = asyncio.Event()
        self._closing = False
        self._up_since: float | None = None
        self._peer_closes = 0
        self._reported_down = False
        # After a loss with messages in flight: how many to send one at a time,
        # and the message that was alone in flight at the last losses.
        self._careful = 0
        self._lost_sending = False
        self._suspect: str | None = None
        self._suspect_losses = 0

    def _properties(self, packet: int) -> Properties | None:
        if not self._v5:
            return None
        props = Properties(packet)  # type: ignore[no-untyped-call]
        props.ContentType = CONTENT_TYPE
        # 1: the payload is UTF-8 text (JSON, MQTT.md).
        props.PayloadFormatIndicator = 1
        return props

    # -- the service's side ----------------------------------------------------

    def wake(self) -> None:
        """New messages were enqueued (call from the event loop's thread)."""
        self._woken = True
        self._idle.clear()
        fut = self._wake_fut
        if fut is not None and not fut.done():
            fut.set_result(None)

    async def drained(self) -> None:
        """Wait until the publisher, connected, has found nothing left to send.

        Refused messages waiting for their retry do not count (see ``journal.py``).
        """
        await self._idle.wait()

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
        except (TimeoutError, _ConnectionLost, aiomqtt.MqttError) as exc:
            log.warning("final status not published: %s", exc or type(exc).__name__)
            return False
        if code >= REFUSAL_MIN:
            log.warning("final status refused by the broker: %s", reason_name(code))
            return False
        self._journal.mark_sent([msg.id])
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
                await self._connect(client)
                up = True
                try:
                    self._connected(client)
                    await self._serve(client)
                finally:
                    await self._disconnect(client)
            except (aiomqtt.MqttError, _ConnectionLost) as exc:
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
            await asyncio.sleep(delay)

    def _new_client(self) -> _AckingClient:
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
        return _AckingClient(
            self.address.host,
            self.address.port,
            username=self._mqtt.username,
            password=self._password,
            identifier=self.client_id,
            protocol=aiomqtt.ProtocolVersion.V5 if self._v5 else aiomqtt.ProtocolVersion.V311,
            will=will,
            clean_session=None if self._v5 else True,
            keepalive=self._mqtt.keepalive_s,
            timeout=CONNECT_TIMEOUT_S,
            tls_context=self._tls,
            logger=PAHO_LOG,
        )

    async def _connect(self, client: _AckingClient) -> None:
        # aiomqtt connects on a worker thread; let that finish even when we are
        # cancelled, so that a socket it opens is closed again, not leaked.
        enter = asyncio.ensure_future(client.__aenter__())
        try:
            await asyncio.shield(enter)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await enter
                await client.__aexit__(None, None, None)
            raise

    async def _disconnect(self, client: _AckingClient) -> None:
        with contextlib.suppress(aiomqtt.MqttError):
            await client.__aexit__(None, None, None)

    def _connected(self, client: _AckingClient) -> None:
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

    def _went_down(self, client: _AckingClient) -> float:
        client.forget_disconnect_error()
        self._client = None
        self.connected = False
        lived = 0.0 if self._up_since is None else time.monotonic() - self._up_since
        self._up_since = None
        return lived

    def _after_loss(
        self,
        client: _AckingClient,
        lived: float,
        first_try: bool,
        error: BaseException | None,
    ) -> float:
        code = client.disconnect_reason
        if not self._reported_down:
            self._reported_down = True
            why = reason_name(code, PacketTypes.DISCONNECT) if code is not None else str(error)
            log.warning("lost the broker connection (%s); reconnecting", why)
        if lived >= STABLE_CONNECTION_S:
            if self.identity_conflict:
                log.info("no other client has taken the session for %.0f s", lived)
            self.identity_conflict = False
            self._peer_closes = 0
        if client.disconnect_from_broker and code == SESSION_TAKEN_OVER:
            return self._conflict("the broker handed our session to another client (0x8E)")
        closed_under_us = (
            code == CONNECTION_LOST
            and not client.disconnect_from_broker
            and not isinstance(error, _AckTimeout)
        )
        if closed_under_us and self._lost_sending:
            # Closed over a message we sent, more likely than by a rival: no verdict.
            pass
        elif closed_under_us and lived < STABLE_CONNECTION_S:
            if self.identity_conflict:
                return self._conflict("the broker closed the connection again")
            self._peer_closes = self._peer_closes + 1 if first_try else 1
            if self._peer_closes >= PEER_CLOSES_FOR_CONFLICT:
                return self._conflict(
                    f"the broker closed {self._peer_closes} connections in a row, each "
                    "right after it accepted the next one"
                )
        elif closed_under_us:
            self._peer_closes = 1
        else:
            self._peer_closes = 0
        return self._backoff(1)

    def _conflict(self, how: str) -> float:
        if not self.identity_conflict:
            self.identity_conflict = True
            detail = (
                f"another client is connected as {self.client_id!r}: {how}; "
                f"retrying every {self._conflict_retry_s:.0f} s instead of fighting for "
                "the session (is this table id configured twice?)"
            )
            log.error("duplicate table identity: %s", detail)
            self._call(self._on_identity_conflict, detail)
        self._peer_closes = 0
        return self._conflict_retry_s * self._rng.uniform(0.9, 1.1)

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self._retry_max_s, self._retry_initial_s * 2 ** min(attempt - 1, 30))
        return self._rng.uniform(ceiling / 2, ceiling)

    def _log_failed_connect(self, error: BaseException | None, attempt: int) -> None:
        if not self._reported_down:
            self._reported_down = True
            log.warning(
                "cannot connect to the broker at %s:%d: %s; retrying",
                self.address.host,
                self.address.port,
                error,
            )
        else:
            log.debug("connect attempt %d failed: %s", attempt, error)

    # -- draining ----------------------------------------------------------------

    async def _serve(self, client: _AckingClient) -> None:
        lost = client.lost
        loop = asyncio.get_running_loop()
        window = min(MAX_IN_FLIGHT, client.receive_maximum or MAX_IN_FLIGHT)
        while True:
            if client.disconnect_reason is not None:
                # Gone already: aiomqtt forgets a disconnect that came with the CONNACK.
                raise _ConnectionLost("connection lost")
            self._check_stable()
            if not self._closing:
                self._woken = False
                batch = self._journal.pending(BATCH)
                if batch:
                    self._idle.clear()
                    await self._send(client, batch, window)
                    continue
                if self._woken:
                    continue
                self._idle.set()
            self._wake_fut = loop.create_future()
            try:
                await asyncio.wait(
                    (self._wake_fut, lost),
                    timeout=None if self._closing else self._retry_timeout(),
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                self._wake_fut = None
            if lost.done():
                raise _ConnectionLost("connection lost")

    def _check_stable(self) -> None:
        if (
            self.identity_conflict
            and self._up_since is not None
            and time.monotonic() - self._up_since >= STABLE_CONNECTION_S
        ):
            log.info("no other client has taken the session for %.0f s", STABLE_CONNECTION_S)
            self.identity_conflict = False

    def _retry_timeout(self) -> float | None:
        at = self._journal.next_retry_at()
        if at is None:
            return None
        # A little past the retry time, so that the message is due when we look.
        return max(0.0, (at - datetime.now(UTC)).total_seconds()) + 0.01

    async def _send(self, client: _AckingClient, batch: list[OutboxMessage], window: int) -> None:
        in_flight: deque[tuple[OutboxMessage, asyncio.Future[int]]] = deque()
        acked: list[str] = []
        try:
            for msg in batch:
                while len(in_flight) >= (1 if self._careful else window):
                    await self._settle_head(client, in_flight, acked)
                try:
                    fut = client.publish_nowait(msg, self._publish_props)
                except ValueError as exc:
                    # paho cannot encode it (it checks topic and size): it can never go.
                    log.error("message %s cannot be published: %s", msg.id, exc)
                    self._refused(msg, IMPLEMENTATION_ERROR)
                    continue
                in_flight.append((msg, fut))
            while in_flight:
                await self._settle_head(client, in_flight, acked)
        except _ConnectionLost:
            if in_flight:
                self._lost_in_flight(client, in_flight[0][0], alone=len(in_flight) == 1)
            raise
        finally:
            if acked:
                _fault_point(batch, acked)
                self._journal.mark_sent(acked)

    def _lost_in_flight(self, client: _AckingClient, head: OutboxMessage, *, alone: bool) -> None:
        """The connection went with ``head`` the oldest message not acknowledged.

        A broker that refuses a PUBLISH by disconnecting (too large, bad
        topic…) would block the outbox forever if that message were simply
        sent again first. A DISCONNECT that names such a reason refuses the
        head at once (PUBACKs and DISCONNECT come in order). A connection that
        just drops says nothing about which message it choked on, so the next
        connection sends one message at a time for a while; a message alone
        on the wire at ``POISON_LOSSES`` losses in a row counts as refused.
        """
        code = client.disconnect_reason
        self._careful = MAX_IN_FLIGHT
        self._lost_sending = True
        if client.disconnect_from_broker and code in MESSAGE_REFUSALS:
            assert code is not None
            self._suspect, self._suspect_losses = None, 0
            self._refused(head, code)
            return
        if not alone:
            return
        if head.id == self._suspect:
            self._suspect_losses += 1
        else:
            self._suspect, self._suspect_losses = head.id, 1
        if self._suspect_losses >= POISON_LOSSES:
            self._suspect, self._suspect_losses = None, 0
            self._refused(head, code if code is not None and code >= REFUSAL_MIN else REFUSAL_MIN)

    async def _settle_head(
        self,
        client: _AckingClient,
        in_flight: deque[tuple[OutboxMessage, asyncio.Future[int]]],
        acked: list[str],
    ) -> None:
        msg, fut = in_flight[0]
        code = await self._ack(client, fut)
        in_flight.popleft()
        if self._careful:
            self._careful -= 1
        if msg.id == self._suspect:
            self._suspect, self._suspect_losses = None, 0
        if code >= REFUSAL_MIN:
            self._refused(msg, code)
        else:
            acked.append(msg.id)

    async def _ack(self, client: _AckingClient, fut: asyncio.Future[int]) -> int:
        lost = client.lost
        done, _ = await asyncio.wait(
            (fut, lost), timeout=self._ack_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if fut in done and fut.result() != _LOST:
            return fut.result()
        if fut in done or lost in done:
            raise _ConnectionLost("connection lost with messages in flight")
        raise _AckTimeout(f"no PUBACK within {self._ack_timeout_s:.0f} s")

    def _refused(self, msg: OutboxMessage, code: int) -> None:
        first = self._journal.mark_refused(msg.id, code)
        if first:
            log.warning(
                "the broker refused message %s on %s: %s; it stays in the outbox",
                msg.id,
                msg.topic,
                reason_name(code),
            )
            self._call(self._on_refused, msg, code)
        else:
            log.debug("message %s refused again: %s", msg.id, reason_name(code))

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        # The service's callbacks only take note; their failure must not stop publishing.
        try:
            callback(*args)
        except Exception:
            log.exception("publisher callback %r failed", callback)
