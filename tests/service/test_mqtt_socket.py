"""The table's MQTT connection, at the socket: a message is written as it is published,
with Nagle's algorithm off, and an idle connection leaves nothing polling."""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.envelope import Envelope
from table_controller.service.mqtt_client import AckingClient
from table_controller.service.outbox import OutboxMessage
from tests.publisher_rig import running_table, status_message
from tests.tcp_relay import relay_to

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


@contextlib.contextmanager
def _writers_added() -> Iterator[list[int]]:
    """The descriptors the event loop is asked to watch for writing, while in the block."""
    loop = asyncio.get_running_loop()
    added: list[int] = []
    add_writer = loop.add_writer

    def counted(fd: Any, callback: Any, *args: Any) -> None:
        added.append(fd)
        add_writer(fd, callback, *args)

    loop.add_writer = counted  # type: ignore[method-assign,assignment]
    try:
        yield added
    finally:
        loop.add_writer = add_writer  # type: ignore[method-assign]


async def test_a_message_the_socket_takes_whole_never_has_the_loop_watch_it(
    client: AckingClient,
) -> None:
    with _writers_added() as added:
        futures = [
            client.publish_nowait(
                OutboxMessage(f"m-{i}", f"{ENV.prefix}/events", b'{"x":1}', 1, False), None
            )
            for i in range(20)
        ]
        codes = await asyncio.wait_for(asyncio.gather(*futures), WAIT_S)
    assert all(code < 0x80 for code in codes), codes
    # Two system calls a message fewer on a card's path (the watch and its removal).
    assert added == []


async def test_what_the_socket_does_not_take_is_written_by_the_loop(
    mosquitto: MosquittoBroker,
) -> None:
    # Through a relay on this event loop: while publish_nowait writes, nothing reads the
    # other end, so a message far larger than the buffers is certain to be left in part.
    async with (
        relay_to(mosquitto.port) as relay,
        AckingClient("127.0.0.1", relay.port, protocol=aiomqtt.ProtocolVersion.V5) as client,
    ):
        sock = client._client.socket()
        assert isinstance(sock, socket.socket)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        big = OutboxMessage("m-big", f"{ENV.prefix}/events", b"x" * (16 << 20), 1, False)
        with _writers_added() as added:
            fut = client.publish_nowait(big, None)
            assert client._client.want_write()
            assert added == [sock.fileno()]
            assert await asyncio.wait_for(fut, WAIT_S) < 0x80
        assert not client._client.want_write()
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
