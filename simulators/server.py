"""Serving one simulated device: on TCP, on a pty or on a serial port, one at a time.

The driver under test opens the same kind of URL as in production:
``socket://HOST:PORT`` for another process, a pty path (a serial port reached
through a stable symlink, as a udev name), or, for a rig on real cables, any
pyserial URL the simulator opens itself.
"""

from __future__ import annotations

from simulators.line import MAX_OUTPUT_BYTES, ByteDevice, Endpoint, Line
from simulators.pty import PtyEndpoint
from simulators.tcp import TcpEndpoint

__all__ = ["MAX_OUTPUT_BYTES", "ByteDevice", "DeviceServer", "Endpoint"]


class DeviceServer:
    """Serves one :class:`ByteDevice` on one endpoint at a time; ``stop()``, then serve again.

    ``replug()`` serves again the way the device was last served, at the same
    address (the same TCP port, pty path or serial port).
    """

    def __init__(
        self, device: ByteDevice, *, name: str = "device", max_output_bytes: int = MAX_OUTPUT_BYTES
    ) -> None:
        self.name = name
        self.line = Line(device, name=name, max_output_bytes=max_output_bytes)
        self._endpoint: Endpoint | None = None
        self._serving = False
        self._pty: Endpoint | None = None
        """Kept across stops, so that the pty's path stays the same (a udev name's role)."""

    @property
    def url(self) -> str | None:
        """What a driver opens: ``socket://HOST:PORT``, the pty's stable path, or the port."""
        return self._endpoint.url if self._endpoint is not None else None

    @property
    def connected(self) -> bool:
        return self._serving and self._endpoint is not None and self._endpoint.connected

    @property
    def serving(self) -> bool:
        return self._serving

    @property
    def dropped_bytes(self) -> int:
        """Bytes thrown away because nobody was connected or the reader was too slow."""
        return self.line.dropped_bytes

    @property
    def connections(self) -> int:
        return self.line.connections

    async def serve_tcp(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0: a free port); returns the ``socket://`` URL."""
        return await self._serve(TcpEndpoint(self.line, host, port))

    async def serve_pty(self) -> str:
        """Open a pty; returns a path that stays the same across ``disconnect()`` and stops."""
        if self._pty is None:
            self._pty = PtyEndpoint(self.line)
        return await self._serve(self._pty)

    async def serve_port(self, endpoint: Endpoint) -> str:
        """Serve on an endpoint built elsewhere (:func:`simulators.serve.serve_on_port`)."""
        return await self._serve(endpoint)

    async def _serve(self, endpoint: Endpoint) -> str:
        if self._serving:
            raise RuntimeError(f"{self.name} simulator is already serving on {self.url}")
        url = await endpoint.start()
        self._endpoint = endpoint
        self._serving = True
        return url

    async def replug(self) -> str:
        """Serve again where the device was last served; RuntimeError if it never was."""
        if self._endpoint is None:
            raise RuntimeError(f"{self.name} simulator was never served: nothing to replug")
        if self._serving:
            return self.url or ""
        return await self._serve(self._endpoint)

    def send(self, data: bytes) -> bool:
        """Send bytes to the connected controller; False (bytes lost) if none is."""
        if not self._serving or self._endpoint is None:
            return self.line.dropped(len(data))
        return self._endpoint.send(data)

    def disconnect(self) -> None:
        """Drop the controller's connection, as a cable pulled and put back; serving goes on."""
        if self._serving and self._endpoint is not None:
            self._endpoint.disconnect()

    async def stop(self) -> None:
        """Stop serving (unplugged); ``serve_*`` or ``replug`` may follow."""
        self._serving = False
        if self._endpoint is not None:
            await self._endpoint.stop()

    async def close(self) -> None:
        """Stop serving for good and free the pty's folder."""
        self._serving = False
        for endpoint in {id(e): e for e in (self._endpoint, self._pty) if e is not None}.values():
            await endpoint.close()
