"""Plain paho MQTT 5 clients over TLS, to see what the pit broker allows.

paho, not the controller's Publisher: these clients stand for the pit
displays, other tables and intruders, and they need the raw CONNACK and PUBACK
reason codes.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from tests.deploy.pit_setup import PitBroker, topic

WAIT_S = 10.0
NOT_AUTHORIZED = 0x87


class MqttError(AssertionError):
    """The broker did not answer as a test expected."""


def _tls_client(
    ca_file: Path, username: str | None, password: str | None, client_id: str
) -> mqtt.Client:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    # CERT_REQUIRED and host name checking: what every client of the pit broker does.
    client.tls_set(ca_certs=str(ca_file))
    if username is not None:
        client.username_pw_set(username, password)
    return client


def connack_reason(
    pit: PitBroker, username: str | None, password: str | None, *, client_id: str = ""
) -> int:
    """Connect once and return the CONNACK reason code, on the caller's thread."""
    client = _tls_client(pit.ca.ca_file, username, password, client_id)
    answers: list[ReasonCode] = []

    def on_connect(
        _c: mqtt.Client, _u: object, _f: mqtt.ConnectFlags, rc: ReasonCode, _p: Properties | None
    ) -> None:
        answers.append(rc)

    client.on_connect = on_connect
    client.connect(pit.host, pit.port, keepalive=30)
    deadline = time.monotonic() + WAIT_S
    try:
        # loop() blocks in select() until the CONNACK arrives: no thread, no sleep.
        while not answers and time.monotonic() < deadline:
            client.loop(timeout=0.5)
    finally:
        client.disconnect()
        client.loop(timeout=0.1)
        sock = client.socket()
        if sock is not None:
            sock.close()
    if not answers:
        raise MqttError(f"no CONNACK within {WAIT_S}s\n{pit.log()}")
    return int(answers[0].value)


class MqttClient:
    """A connected client on paho's network thread; use as a context manager."""

    def __init__(
        self,
        pit: PitBroker,
        username: str,
        *,
        password: str | None = None,
        client_id: str = "",
        will: tuple[str, bytes] | None = None,
    ) -> None:
        self._pit = pit
        if password is None:
            password = pit.accounts[username].password
        self._client = _tls_client(pit.ca.ca_file, username, password, client_id)
        if will is not None:
            self._client.will_set(will[0], will[1], qos=1, retain=True)
        self.disconnects = 0
        self._closing = False
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_publish = self._on_publish
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message
        self._lock = threading.Condition()
        self._connack: ReasonCode | None = None
        self._pubacks: dict[int, int] = {}
        self._subacks: dict[int, list[int]] = {}
        self.messages: queue.Queue[mqtt.MQTTMessage] = queue.Queue()

    # paho callbacks, on its network thread

    def _on_connect(
        self,
        _c: mqtt.Client,
        _u: object,
        _f: mqtt.ConnectFlags,
        rc: ReasonCode,
        _p: Properties | None,
    ) -> None:
        with self._lock:
            self._connack = rc
            self._lock.notify_all()

    def _on_disconnect(
        self,
        _c: mqtt.Client,
        _u: object,
        _f: mqtt.DisconnectFlags,
        _rc: ReasonCode,
        _p: Properties | None,
    ) -> None:
        with self._lock:
            # Only a connection the broker dropped; not the test's own DISCONNECT.
            if not self._closing:
                self.disconnects += 1
            self._lock.notify_all()

    def _on_publish(
        self, _c: mqtt.Client, _u: object, mid: int, rc: ReasonCode, _p: Properties | None
    ) -> None:
        with self._lock:
            self._pubacks[mid] = int(rc.value)
            self._lock.notify_all()

    def _on_subscribe(
        self, _c: mqtt.Client, _u: object, mid: int, rcs: list[ReasonCode], _p: Properties | None
    ) -> None:
        with self._lock:
            self._subacks[mid] = [int(rc.value) for rc in rcs]
            self._lock.notify_all()

    def _on_message(self, _c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        self.messages.put(msg)

    def _wait(self, what: str, ready: Callable[[], bool]) -> None:
        with self._lock:
            if not self._lock.wait_for(ready, timeout=WAIT_S):
                raise MqttError(f"no {what} within {WAIT_S}s\n{self._pit.log()}")

    # the test's side

    def __enter__(self) -> MqttClient:
        self._client.connect(self._pit.host, self._pit.port, keepalive=30)
        self._client.loop_start()
        try:
            self._wait("CONNACK", lambda: self._connack is not None)
            assert self._connack is not None
            if self._connack.is_failure:
                raise MqttError(f"connection refused: {self._connack}")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._closing = True
        self._client.disconnect()
        self._client.loop_stop()
        # paho closes its wake-up socket pair only when the client is collected
        # or reinitialised; a fixture may outlive the leak guard's check.
        self._client.reinitialise()

    def publish(self, topic: str, payload: bytes | str, *, retain: bool = False) -> int:
        """Publish at QoS 1; the PUBACK reason code (0 accepted, 0x87 refused)."""
        info = self._client.publish(topic, payload, qos=1, retain=retain)
        self._wait(f"PUBACK for {topic}", lambda: info.mid in self._pubacks)
        with self._lock:
            return self._pubacks.pop(info.mid)

    def subscribe(self, topic_filter: str) -> list[int]:
        """Subscribe at QoS 1; the SUBACK reason codes."""
        _, mid = self._client.subscribe(topic_filter, qos=1)
        assert mid is not None
        self._wait(f"SUBACK for {topic_filter}", lambda: mid in self._subacks)
        with self._lock:
            return self._subacks.pop(mid)

    def wait_disconnected(self) -> None:
        """Until the broker has dropped this connection."""
        self._wait("disconnect by the broker", lambda: self.disconnects > 0)

    def next_message(self) -> mqtt.MQTTMessage:
        try:
            return self.messages.get(timeout=WAIT_S)
        except queue.Empty:
            raise MqttError(f"no message within {WAIT_S}s\n{self._pit.log()}") from None

    def received_until(self, sentinel_topic: str) -> list[mqtt.MQTTMessage]:
        """Every message before the one on sentinel_topic (which is consumed)."""
        before: list[mqtt.MQTTMessage] = []
        while True:
            msg = self.next_message()
            if msg.topic == sentinel_topic:
                return before
            before.append(msg)

    def pending(self) -> list[mqtt.MQTTMessage]:
        """What has arrived so far, without waiting."""
        out: list[mqtt.MQTTMessage] = []
        while True:
            try:
                out.append(self.messages.get_nowait())
            except queue.Empty:
                return out


def before_sentinel(
    pit: PitBroker, reader: MqttClient, table: str = "war-07"
) -> list[tuple[str, bytes]]:
    """What ``reader`` received before a sentinel that ``table`` publishes now.

    "Nothing arrived" without waiting for a timeout: mosquitto delivers to one
    subscriber in the order it handled the publishes.
    """
    marker = f"sentinel-{uuid.uuid4().hex}".encode()
    with MqttClient(pit, table) as sender:
        assert sender.publish(topic(table, "events"), marker) in (0x00, 0x10)
    received: list[tuple[str, bytes]] = []
    while True:
        msg = reader.next_message()
        if msg.payload == marker:
            return received
        received.append((msg.topic, bytes(msg.payload)))
