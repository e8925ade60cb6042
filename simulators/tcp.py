"""Serving a simulated device on a TCP listen socket (``socket://HOST:PORT``).

A new connection replaces the old one (one controller at a time, as on a
serial line; the old one may be half-open and already given up by its owner);
closing it is unplugging.
"""

from __future__ import annotations

import asyncio
import logging

from simulators.line import Endpoint, Line

log = logging.getLogger("simulators")


class _TcpConnection(asyncio.Protocol):
    def __init__(self, endpoint: TcpEndpoint) -> None:
        self._endpoint = endpoint
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._endpoint._arrived(self)

    def data_received(self, data: bytes) -> None:
        self._endpoint._data(self, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._endpoint._left(self)
        if not self.closed.done():
            self.closed.set_result(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class TcpEndpoint(Endpoint):
    """A listen socket; started again after ``stop()`` it listens on the same port."""

    def __init__(self, line: Line, host: str = "127.0.0.1", port: int = 0) -> None:
        self._line = line
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._conn: _TcpConnection | None = None
        self._all: set[_TcpConnection] = set()

    @property
    def connected(self) -> bool:
        return self._conn is not None

    async def start(self) -> str:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _TcpConnection(self), self.host, self.port, reuse_address=True
        )
        # Keep the port picked for 0, so that a replug listens where the driver looks.
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"socket://{self.host}:{self.port}"
        log.info("%s simulator listening on %s", self._line.name, self.url)
        return self.url

    def send(self, data: bytes) -> bool:
        conn = self._conn
        if conn is None or conn.transport is None:
            return self._line.dropped(len(data))
        if conn.transport.get_write_buffer_size() + len(data) > self._line.max_output_bytes:
            return self._line.dropped(len(data))
        conn.transport.write(data)
        return True

    def disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            self._line.left()

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        self.disconnect()
        for conn in list(self._all):
            conn.close()
        for conn in list(self._all):
            await conn.closed
        if server is not None:
            await server.wait_closed()

    def _arrived(self, conn: _TcpConnection) -> None:
        self._all.add(conn)
        if self._server is None:
            conn.close()
            return
        if self._conn is not None:
            self.disconnect()
        self._conn = conn
        self._line.arrived()

    def _data(self, conn: _TcpConnection, data: bytes) -> None:
        if conn is self._conn:
            self._line.received(data)

    def _left(self, conn: _TcpConnection) -> None:
        self._all.discard(conn)
        if conn is self._conn:
            self._conn = None
            self._line.left()


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; port 0 picks a free one); ValueError naming
    the option otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 0xFFFF:
        raise ValueError(f"--listen wants HOST:PORT, not {text!r}")
    return host, int(port)
