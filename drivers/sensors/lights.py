"""The LIGHTS writer: one thread per plugged-in board, writing while the worker reads.

libusb allows transfers on different endpoints from different threads, and so
does the simulated backend (its sessions keep one reader and one writer). So a
LIGHTS report goes out as soon as it is asked for, while the worker waits in
its interrupt read, and the worker's reads need not be cut short to make room
for it: they wait for the board's next report.
"""

from __future__ import annotations

import concurrent.futures
import errno
import logging
import queue
import threading
from typing import Any, Final

import usb.core

from drivers.errors import DeviceTimeout, TransportError
from drivers.sensors.frames import LightsReport, encode_report

_log = logging.getLogger("drivers.sensors.client")

TRACE: Final = 5
"""Log level of raw report bytes (below DEBUG)."""
EP_OUT: Final = 0x01
WRITE_TIMEOUT_MS: Final = 1000

LightsCommand = tuple[int, "concurrent.futures.Future[bool]"]
END: Final = (-1, None)
"""Put on the queue to end a writer; the commands before it are written first."""
Command = LightsCommand | tuple[int, None]


def gone(exc: usb.core.USBError) -> bool:
    """True when libusb says the device is no longer there."""
    return exc.errno in (errno.ENODEV, errno.ENXIO) or exc.backend_error_code == -4


def write_lights(dev: Any, mask: int) -> None:
    """Write one LIGHTS report (pyusb's errors pass through)."""
    data = encode_report(LightsReport(mask))
    if _log.isEnabledFor(TRACE):
        _log.log(TRACE, "sensor board OUT %s", data.hex())
    dev.write(EP_OUT, data, WRITE_TIMEOUT_MS)


class LightsWriter:
    """Writes the commands from ``commands`` to ``dev`` on a thread of its own, until END."""

    def __init__(
        self,
        dev: Any,
        commands: queue.SimpleQueue[Command],
        stop: threading.Event,
        name: str,
    ) -> None:
        self._dev = dev
        self._commands = commands
        self._stop = stop
        self.lost: str | None = None
        """Why the board turned out to be gone, when a write found it so."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def end(self) -> None:
        """Write what was asked before now, then stop (returns once the thread has)."""
        self._commands.put(END)
        self._thread.join()

    def _run(self) -> None:
        while True:
            mask, future = self._commands.get()
            if future is None:
                return
            if not future.set_running_or_notify_cancel():
                continue
            if self.lost is not None or self._stop.is_set():
                # The board is gone, or the client closing: not delivered.
                future.set_result(False)
                continue
            try:
                write_lights(self._dev, mask)
            except usb.core.USBTimeoutError as exc:
                err: Exception = DeviceTimeout(f"the board did not take LIGHTS {mask:#x}: {exc}")
                err.__cause__ = exc
                future.set_exception(err)
            except usb.core.USBError as exc:
                if gone(exc):
                    self.lost = f"unplugged ({exc})"
                    future.set_result(False)
                    continue
                err = TransportError(f"LIGHTS {mask:#x} failed: {exc}")
                err.__cause__ = exc
                future.set_exception(err)
            except Exception as exc:  # a backend's own failure: the caller hears of it
                future.set_exception(TransportError(f"LIGHTS {mask:#x} failed: {exc}"))
            else:
                future.set_result(True)
