"""The MQTT client under the publisher: aiomqtt, keeping what it would drop.

aiomqtt (>=2.5,<3) stays inside this module and the publisher's. aiomqtt's
``publish()`` drops the PUBACK reason code that paho-mqtt 2.x hands to its
``on_publish`` callback, so :class:`AckingClient` overrides the paho callbacks
aiomqtt registers (``_on_publish``, ``_on_connect``, ``_on_disconnect``) to keep
the reason codes, and publishes through paho's public ``publish()`` on the
client aiomqtt wraps (``_client``) to learn each message's packet id. It
watches aiomqtt's ``_disconnected`` and ``_connected`` futures to notice a lost
connection while idle and one closed before its CONNACK. The tests against
Mosquitto (a denied topic gives PUBACK 0x87) pin this down.

A message goes onto the socket when it is published (``loop_write``), not one
turn of the event loop later behind whatever else is ready (the retained views
built after a card): so paho's request to watch the socket for writing, which
aiomqtt defers with ``call_soon_threadsafe``, is acted on at once when it comes
from the loop's own thread, and its withdrawal then finds it in place.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

import aiomqtt
import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from table_controller.service.outbox import OutboxMessage

CONTENT_TYPE: Final = "application/json"
CONNECT_TIMEOUT_S: Final = 10.0
# MQTT 5: the will waits this long for a reconnect to the session, which lives a little longer.
WILL_DELAY_S: Final = 5
SESSION_EXPIRY_S: Final = 10
LOST: Final = -1
"""The result of a PUBACK future whose connection went first."""


def reason_name(code: int, packet: int = PacketTypes.PUBACK) -> str:
    """The MQTT 5 name of a reason code (``0x87 Not authorized``)."""
    names: dict[str, list[int]] = ReasonCode.names.get(code, {})
    name = next((n for n, packets in names.items() if packet in packets), None)
    if name is None:
        name = next(iter(names), "unknown")
    return f"0x{code:02X} {name}"


def _code(reason: ReasonCode | int) -> int:
    return reason if isinstance(reason, int) else int(reason.value)


class ConnectionLost(Exception):
    """The connection to the broker went while messages were in flight."""


class AckTimeout(ConnectionLost):
    """No PUBACK in time: the connection is treated as dead."""


class AckingClient(aiomqtt.Client):
    """aiomqtt's client, keeping PUBACK reason codes and why the connection closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._acks: dict[int, asyncio.Future[int]] = {}
        self.disconnect_reason: int | None = None
        self.disconnect_from_broker = False
        self.receive_maximum: int | None = None
        # While publish_nowait writes a message itself, paho's request to watch the
        # socket for writing is held: only what the socket did not take needs it.
        self._writing_now = False
        self._write_deferred = False

    @property
    def lost(self) -> asyncio.Future[None]:
        """Done when the connection has gone (valid once connected)."""
        return self._disconnected

    def publish_nowait(
        self, msg: OutboxMessage, properties: Properties | None
    ) -> asyncio.Future[int]:
        """Hand one message to the connection; the future gets its PUBACK reason code.

        ConnectionLost when the connection turns out to be gone (paho finds out as
        it writes), so that the caller treats it as a loss, not as a refusal.
        """
        client = self._client
        self._writing_now = True
        try:
            info = client.publish(msg.topic, msg.payload, msg.qos, msg.retain, properties)
            if info.rc == paho.MQTT_ERR_NO_CONN:
                raise ConnectionLost("connection lost")
            if info.rc != paho.MQTT_ERR_SUCCESS:
                raise aiomqtt.MqttCodeError(info.rc, "could not publish")
            # Onto the socket now: aiomqtt would write it only once the event loop has
            # polled again, after whatever else is ready to run.
            written = client.loop_write()
        finally:
            self._writing_now = False
            if self._write_deferred:
                self._write_deferred = False
                sock = client.socket()
                if client.want_write() and sock is not None:
                    # The socket took part of it: the loop writes the rest when it can.
                    self._add_writer(client, sock.fileno())
        if written != paho.MQTT_ERR_SUCCESS or self._disconnected.done():
            raise ConnectionLost(f"connection lost while writing ({written!s})")
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

    def _on_socket_register_write(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        if self._writing_now and self._on_loop():
            # publish_nowait writes at once; it watches the socket only if bytes are left.
            self._write_deferred = True
            return
        self._add_writer(client, sock.fileno())

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _on_socket_unregister_write(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        if self._write_deferred:
            # Asked for and withdrawn within one publish_nowait: the socket was never watched.
            self._write_deferred = False
            return
        super()._on_socket_unregister_write(client, userdata, sock)

    def _add_writer(self, client: paho.Client, fd: int) -> None:
        def writable() -> None:
            try:
                client.loop_write()
            except Exception as exc:  # a broken pipe: the connection is gone
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)
                return
            if not client.want_write():
                # Nothing left to write: never left polling a writable socket, even
                # when a deferred registration came after paho's withdrawal.
                self._loop.remove_writer(fd)

        if self._on_loop():
            self._loop.add_writer(fd, writable)
        else:
            # paho's connect runs in an executor thread: defer, as aiomqtt does.
            self._loop.call_soon_threadsafe(self._loop.add_writer, fd, writable)

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
                fut.set_result(LOST)
        super()._on_disconnect(client, userdata, flags, reason_code, properties)
        self.forget_disconnect_error()


class PackedProperties(Properties):
    """Properties packed once, when first written, and again only after a change.

    paho packs a message's properties as it writes the message, looking up every
    property MQTT 5 names; the table's PUBLISH properties are the same for every
    message it sends.
    """

    def pack(self) -> bytes:
        packed: bytes | None = self.__dict__.get("_packed")
        if packed is None:
            packed = super().pack()  # type: ignore[no-untyped-call]
            object.__setattr__(self, "_packed", packed)
        return packed

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)  # type: ignore[no-untyped-call]
        self.__dict__.pop("_packed", None)


def properties(packet: int, *, v5: bool) -> PackedProperties | None:
    """``content-type: application/json`` and UTF-8 payloads (docs/feed.md); None under 3.1.1."""
    if not v5:
        return None
    props = PackedProperties(packet)  # type: ignore[no-untyped-call]
    props.ContentType = CONTENT_TYPE
    # 1: the payload is UTF-8 text (JSON, docs/feed.md).
    props.PayloadFormatIndicator = 1
    return props


def session_properties() -> tuple[Properties, int]:
    """CONNECT properties and the will's delay for MQTT 5 (docs/feed.md, one controller per table).

    A session that outlives the connection by a little and a will that waits for it: a
    second controller taking the session then does not make the broker publish the first
    one's will (MQTT 5 §3.1.3.2.2), so each still sees the other's ``online: true``.
    """
    props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
    props.SessionExpiryInterval = SESSION_EXPIRY_S
    return props, WILL_DELAY_S


async def connect(client: AckingClient) -> None:
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


WILL_DISCONNECT: Final = 0x04
"""MQTT 5 DISCONNECT reason "Disconnect with Will Message": the broker publishes the will."""


async def disconnect(client: AckingClient, *, with_will: bool = False) -> None:
    """Close the connection cleanly; ``with_will``: and have the broker publish the last
    will (MQTT 5 only: a 3.1.1 clean disconnect always discards it)."""
    paho_client = client._client
    if with_will and paho_client.protocol == paho.MQTTv5 and not client.lost.done():
        reason = ReasonCode(PacketTypes.DISCONNECT, identifier=WILL_DISCONNECT)
        if paho_client.disconnect(reasoncode=reason) == paho.MQTT_ERR_SUCCESS:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    await asyncio.shield(client.lost)
    with contextlib.suppress(aiomqtt.MqttError):
        await client.__aexit__(None, None, None)


__all__ = [
    "CONNECT_TIMEOUT_S",
    "CONTENT_TYPE",
    "LOST",
    "AckTimeout",
    "AckingClient",
    "ConnectionLost",
    "connect",
    "disconnect",
    "properties",
    "reason_name",
    "session_properties",
]
