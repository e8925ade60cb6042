"""A relay between a table and its broker for the publisher's tests: cut, it looks to
the broker like a client that died; gated, like a broker out of reach; with its
replies held, like a broker that has gone quiet (no PUBACK comes)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any


class TcpRelay:
    """A TCP relay between a client and the broker that a test can cut or gate.

    Cutting aborts both sockets (a reset, no MQTT DISCONNECT): to the broker the
    client died. With the gate closed, new connections are accepted and dropped
    at once, so the client cannot reach the broker. With ``replies`` cleared,
    what the broker sends is held back (until set again, or the relay is cut).
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.open = True
        self.replies = asyncio.Event()
        self.replies.set()
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
                await asyncio.gather(
                    self._pipe(reader, up_writer), self._pipe(up_reader, writer, self.replies)
                )
            finally:
                for transport in pair:
                    transport.abort()
                    self._transports.discard(transport)
        finally:
            self._tasks.discard(task)

    @staticmethod
    async def _pipe(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        flowing: asyncio.Event | None = None,
    ) -> None:
        try:
            while data := await reader.read(65536):
                if flowing is not None:
                    await flowing.wait()
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
        self.replies.set()  # nothing left waiting to pass
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
