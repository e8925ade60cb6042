"""Errors of the bet-sensor board, sorted by what the caller can do (STYLE.md, convention 6)."""

from __future__ import annotations

from drivers.errors import DeviceError, DeviceLinkError, DeviceTimeout, TransportError

SensorBoardError = DeviceLinkError
"""Every error of the sensor-board driver is one of the drivers' common errors."""

__all__ = [
    "BackendUnavailable",
    "BadReport",
    "DeviceError",
    "DeviceTimeout",
    "SensorBoardError",
    "TransportError",
]


class BadReport(DeviceError):
    """A report that does not follow DEVICES.md ("Bet sensor board").

    The driver counts and skips these; it never stops reading because of one.
    """

    def __init__(self, reason: str, data: bytes = b"") -> None:
        super().__init__(reason)
        self.reason = reason
        self.data = bytes(data)


class BackendUnavailable(DeviceLinkError):
    """No USB backend can reach the board (libusb missing, or a URL no backend serves).

    Retrying does not help: install libusb 1.0 or fix the device URL.
    """
