"""The table's MQTT connection, at the socket: a message is written as it is published,
with Nagle's algorithm off, and an idle connection leaves nothing polling."""

from __future__ import annotations

import asyncio
import selectors
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiomqtt
import pytest

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.envelope import Envelope
from table_controller.service.mqtt_client import AckingClient
from table_controller.service.outbox import OutboxMessage
from tests.publisher_rig import running_table, status_message

WAIT_S = 10.0
ENV = Envelope(table="war-07", site="main-floor", prefix="casino/main-floor/table/war-07")


@pytest.fixture
async def client(mosquitto: MosquittoBroker) -> AsyncIterator[AckingClient]:
    async with AckingClient(
        mosquitto.host, mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5
    ) as c:
        yield c


def _watched_for_writing(sock: socket.socket) -> bool:
    selector = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
    key = selector.get_map().get(sock.fileno())
    return key is not None and bool(key.events & selectors.EVENT_WRITE)


async def test_a_message_is_on_the_socket_when_published_and_then_nothing_polls(
    client: AckingClient,
) -> None:
    msg = OutboxMessage("m-1", f"{ENV.prefix}/events", b'{"x":1}', 1, False)
    fut = client.publish_nowait(msg, None)
    # Before this task yields: nothing waits in paho's queue for the loop's next turn.
    assert not client._client.want_write()
    # Accepted (0x10 says nobody subscribes; a refusal would be 0x80 or above).
    assert await asyncio.wait_for(fut, WAIT_S) < 0x80
    # Nothing left watching a socket with nothing to write (that would spin the loop).
    sock = client._client.socket()
    assert isinstance(sock, socket.socket)
    assert not _watched_for_writing(sock)


async def test_the_tables_connection_has_nagle_off(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    async with running_table(tmp_path / "j.sqlite3", mosquitto.url) as table:
        await table.wait_connected()
        table.publish(status_message())
        await table.drained()
        connection = table.publisher._client
        assert connection is not None
        sock = connection._client.socket()
        assert isinstance(sock, socket.socket)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
