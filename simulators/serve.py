"""What every line-framed simulator shares, and how a rig serves one on a serial line.

A :class:`SimulatedLineDevice` (the shoe, the console) is served on a TCP
listen socket (``serve_tcp``), a pty of its own (``serve_pty``) or a serial
port it opens itself (:func:`serve_on_port`), one at a time; the bytes are the
same on all three (docs/devices.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from drivers.backoff import BACKOFF_CAP_S, BACKOFF_INITIAL_S
from drivers.lifecycle import AsyncResource
from drivers.lineframe.codec import LineDecoder, LineFrame
from drivers.transport import DEFAULT_BAUDRATE
from simulators.errors import LineSettingsError
from simulators.port import LineSettings, PortEndpoint
from simulators.server import DeviceServer

__all__ = [
    "DeviceServer",
    "LineSettings",
    "LineSettingsError",
    "PortEndpoint",
    "SimulatedLineDevice",
    "serve_on_port",
]

C = TypeVar("C", bound=LineFrame)


class SimulatedLineDevice(AsyncResource, Generic[C]):
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

    async def serve_endpoint(self, endpoint: PortEndpoint) -> str:
        """Serve on a serial port (see :func:`serve_on_port`, which builds it)."""
        url = await self.server.serve_port(endpoint)
        self._start_heartbeats()
        return url

    async def replug(self) -> str:
        """Serve again where :meth:`stop_serving` stopped (same port, pty path or device)."""
        url = await self.server.replug()
        self._start_heartbeats()
        return url

    def disconnect(self) -> None:
        """Drop the controller's connection (the device stays as it is)."""
        self.server.disconnect()

    async def stop_serving(self) -> None:
        """Unplug: stop serving; the device keeps its state and may be served again."""
        await self.server.stop()

    async def open(self) -> None:
        """Nothing to open: serving begins with ``serve_tcp``/``serve_pty``/``serve_on_port``."""

    async def close(self) -> None:
        task, self._heartbeat_task = self._heartbeat_task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        await self.server.close()

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
        """The controller left: a device keeps its state for the next one."""


async def serve_on_port(
    device: SimulatedLineDevice[Any],
    url: str,
    *,
    baudrate: int = DEFAULT_BAUDRATE,
    bytesize: int = 8,
    parity: str = "N",
    stopbits: float = 1,
    reopen_initial_s: float = BACKOFF_INITIAL_S,
    reopen_cap_s: float = BACKOFF_CAP_S,
) -> PortEndpoint:
    """Serve ``device`` (a shoe or console simulator) on the serial line at ``url``.

    ``url`` is anything pyserial opens: a device path (``/dev/ttyUSB1``, a pty
    such as one end of a ``socat`` pty pair), ``rfc2217://host:port``,
    ``socket://host:port``. The line runs at ``baudrate`` with ``bytesize``
    data bits (5–8), ``parity`` (``N``, ``E``, ``O``, ``M``, ``S``) and
    ``stopbits`` (1, 1.5, 2); docs/devices.md's default is 115200 8N1.

    Returns once serving has begun, with the port open if it is there; the
    returned endpoint's ``await wait_open()`` waits for the port, ``connected``
    says whether it is open now and ``opens`` counts openings. The device
    speaks on the port while it is open: heartbeats, its answers and what the
    rig makes it do, exactly the bytes it speaks on TCP or its own pty. A port
    that fails (vanished) is closed, logged, and opened again with capped,
    jittered backoff (``reopen_initial_s`` doubling up to ``reopen_cap_s``)
    until it is back; a port not there at the call is looked for the same way.
    ``device.disconnect()`` closes and reopens it; ``device.stop_serving()``
    closes it until ``device.replug()``; ``device.close()`` ends serving.

    Raises :class:`LineSettingsError` (a ``ValueError``) for line settings
    that are not valid, or a URL pyserial can never open; ``RuntimeError`` if
    the device is already being served.
    """
    settings = LineSettings(baudrate, bytesize, parity, stopbits)
    endpoint = PortEndpoint(
        device.server.line,
        url,
        settings,
        reopen_initial_s=reopen_initial_s,
        reopen_cap_s=reopen_cap_s,
    )
    await device.serve_endpoint(endpoint)
    return endpoint
