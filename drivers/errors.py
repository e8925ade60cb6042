"""Every error a device driver raises, sorted by what the caller can do.

::

    DeviceLinkError                 root: anything from drivers/
    ├── TransportError              retry: the link failed or is not up; a reconnect may mend it
    ├── DeviceTimeout               retry: the device did not answer in time
    ├── DeviceError                 the device said no, or sent what cannot be used
    │   ├── FrameError              a line frame that is no frame of this device (dropped, counted)
    │   ├── BadReport               a report the protocol does not allow (dropped, counted)
    │   └── BadMessage              a simusb line that is no message of that wire (skipped, counted)
    └── DeviceConfigError           fix the configuration: no retry mends it
        ├── BadDeviceUrl            a device URL of the wrong form
        └── BackendUnavailable      no USB backend can reach the board (libusb missing)

The parse errors are ``ValueError`` too and the URL error is, so code that
validates input with ``except ValueError`` keeps working. Every error raised
while handling another is chained with ``from``.
"""

from __future__ import annotations


class DeviceLinkError(Exception):
    """Base of every error raised by a device driver."""


class TransportError(DeviceLinkError):
    """The link failed or is not up; retrying later (after a reconnect) may succeed."""


class DeviceTimeout(DeviceLinkError):
    """The device did not answer in time; retrying may help."""


class DeviceError(DeviceLinkError):
    """The device answered with something unusable or refused what was asked."""


class FrameError(DeviceError, ValueError):
    """A line body that is not a frame of this device: unknown type or bad fields."""


class BadReport(DeviceError, ValueError):
    """A sensor-board report that does not follow docs/devices.md ("Bet sensor board").

    The driver counts and skips these; it never stops reading because of one.
    """

    def __init__(self, reason: str, data: bytes = b"") -> None:
        super().__init__(reason)
        self.reason = reason
        self.data = bytes(data)


class BadMessage(DeviceError, ValueError):
    """A line of the simusb wire that is not one of its messages."""


class DeviceConfigError(DeviceLinkError):
    """The configuration names something no driver can use: fix it, retrying won't help."""


class BadDeviceUrl(DeviceConfigError, ValueError):
    """A device URL of the wrong form; the message says which form is expected."""


class BackendUnavailable(DeviceConfigError):
    """No USB backend can reach the board: install libusb 1.0 or use a ``simusb://`` URL."""
