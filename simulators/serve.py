"""Serving a simulated serial device over a pty or a TCP listen socket.

The driver under test opens the same kind of URL as in production (STYLE.md,
convention 2): a pty behaves as a serial port (``/dev/pts/N``, reached through
a stable symlink like a udev name), and a TCP socket as ``socket://HOST:PORT``
for another process. Either way, one controller is connected at a time, as on
a serial line:

- TCP: a new connection replaces the old one; closing it is unplugging.
- pty: the simulator keeps only the master side. It sees the controller arrive
  when the slave is opened (the master stops reporting hang-up) and leave when
  it is closed (reads fail with EIO), so "connect" means the same on both.
  ``disconnect()`` replaces the pty behind the symlink: the old one fails under
  the driver, and the driver finds the new one at the same path.

Bytes sent while nobody is connected are lost, as on a real line; output
waiting for a slow reader is capped (``MAX_OUTPUT_BYTES``) and the excess
dropped and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import select
import tempfile
import tty
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar

from drivers.lineframe.codec import LineDecoder, LineFrame

log = logging.getLogger("simulators")

MAX_OUTPUT_BYTES = 256 * 1024
PTY_POLL_S = 0.02
"""How often a pty nobody has open is checked for a controller opening it."""

C = TypeVar("C", bound=LineFrame)


class ByteDevice(Protocol):
    """What a simulated device implements to be served."""

    def connection_made(self) -> None: ...

    def data_received(self, data: bytes) -> None: ...

    def connection_lost(self) -> None: ...


class _TcpConnection(asyncio.Protocol):
    def __init__(self, server: DeviceServer) -> None:
        self._server = server
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._server._tcp_arrived(self)

    def data_received(self, data: bytes) -> None:
        self._server._tcp_data(self, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._server._tcp_left(self)
        if not self.closed.done():
            self.closed.set_result(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class _Pty:
    """One pty pair seen from the master side, with its slave's path."""

    def __init__(self) -> None:
        master, slave = os.openpty()
        try:
            # Raw from the start: with the default echo on, what the simulator writes
            # would come straight back to it before the driver configures the port.
            tty.setraw(slave)
            self.slave_path = os.ttyname(slave)
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self.master = master
        self._poll = select.poll()
        self._poll.register(master, select.POLLIN | select.POLLHUP)

    def slave_open(self) -> bool:
        """True while some process has the slave open (Linux: no POLLHUP on the master)."""
        return not any(ev & select.POLLHUP for _, ev in self._poll.poll(0))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.master)


class DeviceServer:
    """Serves one :class:`ByteDevice` on a pty or a TCP port; ``stop()``, then serve again."""

    def __init__(
        self, device: ByteDevice, *, name: str = "device", max_output_bytes: int = MAX_OUTPUT_BYTES
    ) -> None:
        self._device = device
        self.name = name
        self._max_output = max_output_bytes
        self.url: str | None = None
        """What a driver opens: ``socket://HOST:PORT`` or the pty's stable path."""
        self.dropped_bytes = 0
        """Bytes thrown away because nobody was connected or the reader was too slow."""
        self.connections = 0
        # TCP
        self._tcp_server: asyncio.Server | None = None
        self._tcp_conn: _TcpConnection | None = None
        self._tcp_all: set[_TcpConnection] = set()
        # pty
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._link_path: Path | None = None
        self._pty: _Pty | None = None
        self._pty_connected = False
        self._pty_out = bytearray()
        self._pty_writer = False
        self._pty_timer: asyncio.Handle | None = None

    @property
    def connected(self) -> bool:
        return self._tcp_conn is not None or self._pty_connected

    # -- serving -----------------------------------------------------------------------

    async def serve_tcp(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0: a free port); returns the ``socket://`` URL."""
        self._check_idle()
        loop = asyncio.get_running_loop()
        self._tcp_server = await loop.create_server(
            lambda: _TcpConnection(self), host, port, reuse_address=True
        )
        bound = self._tcp_server.sockets[0].getsockname()
        self.url = f"socket://{host}:{bound[1]}"
        log.info("%s simulator listening on %s", self.name, self.url)
        return self.url

    async def serve_pty(self) -> str:
        """Open a pty; returns a path that stays the same across ``disconnect()``."""
        self._check_idle()
        if self._tmpdir is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix=f"sim-{self.name}-")
            self._link_path = Path(self._tmpdir.name) / self.name
        self._new_pty()
        assert self._link_path is not None
        self.url = str(self._link_path)
        log.info("%s simulator on pty %s", self.name, self.url)
        return self.url

    def _check_idle(self) -> None:
        if self._tcp_server is not None or self._pty is not None:
            raise RuntimeError(f"{self.name} simulator is already serving on {self.url}")

    def send(self, data: bytes) -> bool:
        """Send bytes to the connected controller; False (bytes lost) if none is."""
        conn = self._tcp_conn
        if conn is not None and conn.transport is not None:
            if conn.transport.get_write_buffer_size() + len(data) > self._max_output:
                self.dropped_bytes += len(data)
                return False
            conn.transport.write(data)
            return True
        if self._pty_connected:
            return self._pty_send(data)
        self.dropped_bytes += len(data)
        return False

    def disconnect(self) -> None:
        """Drop the controller's connection, as pulling the cable; serving goes on."""
        if self._tcp_conn is not None:
            self._drop_tcp()
        if self._pty is not None:
            self._close_pty()
            self._new_pty()

    async def stop(self) -> None:
        """Stop serving (unplugged); ``serve_tcp``/``serve_pty`` may follow again."""
        server, self._tcp_server = self._tcp_server, None
        if server is not None:
            server.close()
        self._drop_tcp()
        for conn in list(self._tcp_all):
            conn.close()
        for conn in list(self._tcp_all):
            await conn.closed
        if server is not None:
            await server.wait_closed()
        if self._pty is not None:
            self._close_pty()
            if self._link_path is not None:
                with contextlib.suppress(FileNotFoundError):
                    self._link_path.unlink()

    async def close(self) -> None:
        """Stop serving for good and remove the pty's folder."""
        await self.stop()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    # -- TCP ---------------------------------------------------------------------------

    def _tcp_arrived(self, conn: _TcpConnection) -> None:
        self._tcp_all.add(conn)
        if self._tcp_server is None:
            conn.close()
            return
        if self._tcp_conn is not None:
            # One controller at a time, as on a serial line: the newest wins (the old one
            # may be a half-open connection its owner already gave up).
            self._drop_tcp()
        self._tcp_conn = conn
        self.connections += 1
        self._device.connection_made()

    def _drop_tcp(self) -> None:
        conn, self._tcp_conn = self._tcp_conn, None
        if conn is not None:
            conn.close()
            self._device.connection_lost()

    def _tcp_data(self, conn: _TcpConnection, data: bytes) -> None:
        if conn is self._tcp_conn:
            self._device.data_received(data)

    def _tcp_left(self, conn: _TcpConnection) -> None:
        self._tcp_all.discard(conn)
        if conn is self._tcp_conn:
            self._tcp_conn = None
            self._device.connection_lost()

    # -- pty ---------------------------------------------------------------------------

    def _new_pty(self) -> None:
        assert self._link_path is not None
        pty = _Pty()
        self._pty = pty
        staged = self._link_path.with_suffix(".new")
        with contextlib.suppress(FileNotFoundError):
            staged.unlink()
        staged.symlink_to(pty.slave_path)
        staged.replace(self._link_path)
        self._pty_timer = asyncio.get_running_loop().call_soon(self._pty_watch)

    def _close_pty(self) -> None:
        pty, self._pty = self._pty, None
        if pty is None:
            return
        loop = asyncio.get_running_loop()
        if self._pty_timer is not None:
            self._pty_timer.cancel()
            self._pty_timer = None
        loop.remove_reader(pty.master)
        loop.remove_writer(pty.master)
        self._pty_writer = False
        self._pty_out.clear()
        pty.close()
        if self._pty_connected:
            self._pty_connected = False
            self._device.connection_lost()

    def _pty_watch(self) -> None:
        """Wait for a controller to open the slave, then read from the master."""
        self._pty_timer = None
        pty = self._pty
        if pty is None:
            return
        loop = asyncio.get_running_loop()
        if not pty.slave_open():
            self._pty_timer = loop.call_later(PTY_POLL_S, self._pty_watch)
            return
        self._pty_connected = True
        self.connections += 1
        loop.add_reader(pty.master, self._pty_readable)
        self._device.connection_made()

    def _pty_readable(self) -> None:
        pty = self._pty
        assert pty is not None
        try:
            data = os.read(pty.master, 4096)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            data = b""
        if data:
            self._device.data_received(data)
            return
        # EIO: the controller closed the slave. Wait for it to open it again.
        loop = asyncio.get_running_loop()
        loop.remove_reader(pty.master)
        loop.remove_writer(pty.master)
        self._pty_writer = False
        self._pty_out.clear()
        self._pty_connected = False
        self._device.connection_lost()
        self._pty_timer = loop.call_later(PTY_POLL_S, self._pty_watch)

    def _pty_send(self, data: bytes) -> bool:
        pty = self._pty
        assert pty is not None
        if len(self._pty_out) + len(data) > self._max_output:
            self.dropped_bytes += len(data)
            return False
        self._pty_out += data
        self._pty_flush()
        return True

    def _pty_flush(self) -> None:
        pty = self._pty
        if pty is None:
            return
        try:
            while self._pty_out:
                written = os.write(pty.master, self._pty_out)
                del self._pty_out[:written]
        except BlockingIOError:
            pass
        except OSError:
            self.dropped_bytes += len(self._pty_out)
            self._pty_out.clear()
        loop = asyncio.get_running_loop()
        if self._pty_out and not self._pty_writer:
            loop.add_writer(pty.master, self._pty_flush)
            self._pty_writer = True
        elif not self._pty_out and self._pty_writer:
            loop.remove_writer(pty.master)
            self._pty_writer = False


class SimulatedLineDevice(Generic[C]):
    """What every line-framed simulator shares: a server, a command decoder, heartbeats.

    Subclasses implement :meth:`heartbeat`, :meth:`on_command` and
    :meth:`on_connect`, and send with :meth:`send_frame`.
    """

    def __init__(self, *, name: str, parse: Callable[[str], C], heartbeat_s: float) -> None:
        if heartbeat_s <= 0:
            raise ValueError("heartbeat_s must be positive")
        self.name = name
        self.heartbeat_s = heartbeat_s
        self.server = DeviceServer(self, name=name)
        self.decoder: LineDecoder[C] = LineDecoder(parse)
        self.received: list[C] = []
        """Every command received, in order."""
        self.observers: list[Callable[[C], None]] = []
        """Called with every command received (after the device has acted on it)."""
        self.hung = False
        """A hung device says nothing at all (heartbeats included) while its link stays up."""
        self._heartbeat_task: asyncio.Task[None] | None = None

    # -- to override -------------------------------------------------------------------

    def heartbeat(self) -> LineFrame | None:
        """The frame sent every ``heartbeat_s`` (None: send nothing this time)."""
        return None

    def tick(self) -> None:
        """Every ``heartbeat_s``: send the heartbeat (extend for other timed behaviour)."""
        frame = self.heartbeat()
        if frame is not None:
            self.send_frame(frame)

    def on_command(self, command: C) -> None:
        """A checked frame from the controller."""

    def on_connect(self) -> None:
        """A controller connected."""

    def on_disconnect(self) -> None:
        """The controller left."""

    def send_frame(self, frame: LineFrame) -> bool:
        """Send one frame; False if it was not sent (hung, or nobody connected)."""
        if self.hung:
            return False
        return self.server.send(frame.encode())

    def hang(self) -> None:
        """The device stops talking; its link stays up (the watchdog's case)."""
        self.hung = True

    def resume(self) -> None:
        self.hung = False

    # -- serving -----------------------------------------------------------------------

    @property
    def url(self) -> str | None:
        return self.server.url

    @property
    def connected(self) -> bool:
        return self.server.connected

    async def serve_tcp(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on TCP; returns the ``socket://`` URL for the driver."""
        url = await self.server.serve_tcp(host, port)
        self._start_heartbeats()
        return url

    async def serve_pty(self) -> str:
        """Serve on a pty; returns its path for the driver."""
        path = await self.server.serve_pty()
        self._start_heartbeats()
        return path

    def disconnect(self) -> None:
        """Drop the controller's connection (the device stays as it is)."""
        self.server.disconnect()

    async def stop_serving(self) -> None:
        """Unplug: stop serving; the device keeps its state and may be served again."""
        await self.server.stop()

    async def close(self) -> None:
        task, self._heartbeat_task = self._heartbeat_task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        await self.server.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _start_heartbeats(self) -> None:
        if self._heartbeat_task is None:
            self._heartbeat_task = asyncio.create_task(
                self._heartbeats(), name=f"{self.name}-sim-heartbeat"
            )

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            self.tick()

    # -- ByteDevice --------------------------------------------------------------------

    def connection_made(self) -> None:
        self.decoder.reset()
        self.on_connect()

    def data_received(self, data: bytes) -> None:
        for command in self.decoder.feed(data):
            self.received.append(command)
            self.on_command(command)
            for observer in self.observers:
                observer(command)

    def connection_lost(self) -> None:
        self.on_disconnect()
