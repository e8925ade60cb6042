"""Errors of the bet-sensor board, sorted by what the caller can do (STYLE.md, convention 6)."""

from __future__ import annotations


class SensorBoardError(Exception):
    """Base of every error raised by the sensor-board driver."""


class TransportError(SensorBoardError):
    """The link to the board failed; the same call may succeed when retried."""


class DeviceError(SensorBoardError):
    """The board (or what claims to be one) answered with something unusable."""


class DeviceTimeout(SensorBoardError):
    """The board did not complete a transfer in time; retrying may help."""


class BadReport(DeviceError):
    """A report that does not follow DEVICES.md ("Bet sensor board").

    The driver counts and skips these; it never stops reading because of one.
    """

    def __init__(self, reason: str, data: bytes = b"") -> None:
        super().__init__(reason)
        self.reason = reason
        self.data = bytes(data)


class BackendUnavailable(SensorBoardError):
    """No USB backend can reach the board (libusb missing, or a URL no backend serves).

    Retrying does not help: install libusb 1.0 or fix the device URL.
    """
