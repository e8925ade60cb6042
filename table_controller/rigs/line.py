"""A simulated line device on the rig's end of a real serial line.

A bench wires the table PC's shoe and console ports to the rig's ports with
null-modem cables; the rig opens its end as any pyserial URL or device path
(``/dev/ttyUSB1``, ``rfc2217://…``, a pty) and speaks the device's bytes on it,
the same bytes it speaks over TCP or its own pty (``simulators/serve.py``).

A serial line has no connection to make or lose: the device talks as soon as
its end is open (a shoe sends ``HELLO`` at power-up) and the table's end
hears it whenever it is open. Closing the rig's end is pulling the cable: the
table hears nothing more, and its heartbeat watchdog calls the device offline
(DEVICES.md); opening it again is putting the cable back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any, Final

import serial

from drivers.transport import DEFAULT_BAUDRATE
from simulators.serve import DeviceServer, SimulatedLineDevice
from table_controller.rigs.errors import RigUnavailable

log = logging.getLogger(__name__)

READ_TIMEOUT_S: Final = 0.05
"""How long the reader thread blocks on the line before it checks whether to stop."""


class _LineServer(DeviceServer):
    """The device's server, writing to the open line instead of a socket or a pty."""

    def __init__(self, line: SerialLine) -> None:
        super().__init__(line.device, name=line.device.name)
        self._line = line
        self.url = line.url

    @property
    def connected(self) -> bool:
        return self._line.is_open

    def send(self, data: bytes) -> bool:
        return self._line.write(data)

    def disconnect(self) -> None:
        """A serial line has no connection to drop."""

    async def stop(self) -> None:
        await self._line.close()

    async def close(self) -> None:
        await self._line.close()


class SerialLine:
    """Serves ``device`` on the serial line ``url`` while open."""

    def __init__(
        self, device: SimulatedLineDevice[Any], url: str, *, baudrate: int = DEFAULT_BAUDRATE
    ) -> None:
        self.device = device
        self.url = url
        self.baudrate = baudrate
        self.dropped_bytes = 0
        self._port: serial.Serial | None = None
        self._reader: threading.Thread | None = None
        self._stop = threading.Event()
        self._heartbeats: asyncio.Task[None] | None = None
        device.server = _LineServer(self)

    @property
    def is_open(self) -> bool:
        return self._port is not None

    async def open(self) -> None:
        """Open the rig's end; the device starts talking (as at power-up)."""
        if self._port is not None:
            return
        try:
            port = await asyncio.to_thread(
                serial.serial_for_url, self.url, baudrate=self.baudrate, timeout=READ_TIMEOUT_S
            )
        except (OSError, ValueError, serial.SerialException) as exc:
            raise RigUnavailable(
                f"the {self.device.name} line {self.url}: cannot open: {exc}"
            ) from exc
        self._port = port
        self._stop.clear()
        loop = asyncio.get_running_loop()
        self._reader = threading.Thread(
            target=self._read, args=(port, loop), name=f"rig-{self.device.name}-line", daemon=True
        )
        self._reader.start()
        self._heartbeats = asyncio.create_task(
            self._beat(), name=f"rig-{self.device.name}-heartbeat"
        )
        self.device.connection_made()
        log.info("%s simulator on the line %s", self.device.name, self.url)

    async def close(self) -> None:
        """Close the rig's end (the cable pulled); the device keeps its state."""
        port, self._port = self._port, None
        if port is None:
            return
        task, self._heartbeats = self._heartbeats, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        self._stop.set()
        reader, self._reader = self._reader, None
        if reader is not None:
            await asyncio.to_thread(reader.join)
        await asyncio.to_thread(port.close)
        self.device.connection_lost()

    def write(self, data: bytes) -> bool:
        port = self._port
        if port is None:
            self.dropped_bytes += len(data)
            return False
        try:
            port.write(data)
        except (OSError, serial.SerialException) as exc:
            log.warning("%s line %s: write failed: %s", self.device.name, self.url, exc)
            self.dropped_bytes += len(data)
            return False
        return True

    def _read(self, port: serial.Serial, loop: asyncio.AbstractEventLoop) -> None:
        while not self._stop.is_set():
            try:
                data = port.read(max(1, port.in_waiting))
            except (OSError, TypeError, serial.SerialException) as exc:
                # The rig's own end went (an adapter unplugged): nothing more to read.
                if not self._stop.is_set():
                    log.warning("%s line %s: read failed: %s", self.device.name, self.url, exc)
                return
            if data:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(self._received, data)

    def _received(self, data: bytes) -> None:
        if self._port is not None:
            self.device.data_received(data)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.device.heartbeat_s)
            self.device.tick()
