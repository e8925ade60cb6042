"""The device's end of a line, and the contract of every way of serving it.

A simulated device is served on one :class:`Endpoint` at a time (a TCP listen
socket, :mod:`simulators.tcp`; a pty, :mod:`simulators.pty`; a serial port,
:mod:`simulators.port`). Each tells the device's :class:`Line` when a
controller arrives, what bytes it sent, and when it leaves. One controller is
connected at a time, as on a serial line.

Bytes sent while nobody is connected are lost, as on a real line; output
waiting for a slow reader is capped (``MAX_OUTPUT_BYTES``) and the excess
dropped and counted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

MAX_OUTPUT_BYTES = 256 * 1024


class ByteDevice(Protocol):
    """What a simulated device implements to be served."""

    def connection_made(self) -> None: ...

    def data_received(self, data: bytes) -> None: ...

    def connection_lost(self) -> None: ...


class Line:
    """The device's end of the line, shared by every way of serving it: it forwards
    arrivals, bytes and departures to the device and counts what was lost."""

    def __init__(self, device: ByteDevice, *, name: str, max_output_bytes: int) -> None:
        self.device = device
        self.name = name
        self.max_output_bytes = max_output_bytes
        self.dropped_bytes = 0
        self.connections = 0

    def arrived(self) -> None:
        self.connections += 1
        self.device.connection_made()

    def received(self, data: bytes) -> None:
        self.device.data_received(data)

    def left(self) -> None:
        self.device.connection_lost()

    def dropped(self, size: int) -> bool:
        """Count ``size`` bytes lost; False, for a ``send`` to return."""
        self.dropped_bytes += size
        return False


class Endpoint(ABC):
    """One way of serving a device. ``start`` may follow ``stop`` again (replugging)."""

    url: str | None = None

    @property
    @abstractmethod
    def connected(self) -> bool:
        """A controller is on the line now."""

    @abstractmethod
    async def start(self) -> str:
        """Begin serving; returns what the driver opens."""

    @abstractmethod
    def send(self, data: bytes) -> bool:
        """Send bytes to the controller; False (bytes lost, counted) if they were not."""

    @abstractmethod
    def disconnect(self) -> None:
        """Drop the controller's connection as a pulled cable would; serving goes on."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop serving: the line is dead until ``start`` again."""

    async def close(self) -> None:
        """Stop serving for good and free what ``start`` made."""
        await self.stop()
