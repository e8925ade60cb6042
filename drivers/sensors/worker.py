"""The sensor board's worker thread: every pyusb read of one board, in one place.

pyusb is blocking, so one thread per board finds the board by VID:PID (and
serial number, when the URL pins one), claims its interface, reads the
interrupt IN endpoint, and hands events to the event loop through ``post``.
While the board is plugged in, a second thread writes the LIGHTS asked for as
they are asked (``drivers/sensors/lights.py``). While the board is away the
worker looks for it again with capped, jittered backoff.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

import usb.core
import usb.util

from drivers.backoff import backoff_delay
from drivers.errors import BadReport, DeviceError
from drivers.sensors.frames import MAX_PACKET_BYTES, parse_in_report
from drivers.sensors.lights import EP_OUT, TRACE, Command, LightsWriter, gone, write_lights
from drivers.sensors.protocol import BoardOffline, BoardOnline, SnapshotAssembler
from drivers.sensors.simusb import SimUsbBackend
from drivers.sensors.url import SensorUrl

_log = logging.getLogger("drivers.sensors.client")

INTERFACE = 0
EP_IN = 0x81
MAX_CONSECUTIVE_USB_ERRORS = 10
"""A board failing this many transfers in a row is treated as lost and found again."""

DONE = object()
"""Posted last, once the worker has released the board and stopped."""


class _State(Enum):
    UNKNOWN = "unknown"
    ONLINE = "online"
    OFFLINE = "offline"


class BoardWorker:
    """The thread side of one :class:`~drivers.sensors.client.SensorBoardClient` session."""

    def __init__(
        self,
        url: str,
        target: SensorUrl,
        backend: Any,
        loop: asyncio.AbstractEventLoop,
        deliver: Callable[[object], None],
        *,
        heartbeat_timeout_s: float,
        reconnect_min_s: float,
        reconnect_max_s: float,
        read_slice_ms: int,
        rng: random.Random,
        lights: int | None,
    ) -> None:
        self.url = url
        self.target = target
        self._backend = backend
        self._loop = loop
        self._deliver = deliver
        self._heartbeat_timeout_s = heartbeat_timeout_s
        self._reconnect_min_s = reconnect_min_s
        self._reconnect_max_s = reconnect_max_s
        self._read_slice_ms = read_slice_ms
        self._rng = rng
        self._lights = lights
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._state = _State.UNKNOWN
        self.reports = 0
        self.bad_reports = 0
        self.usb_errors = 0
        self.connects = 0

    def stop(self) -> None:
        """Ask the thread to release the board and end (it posts DONE when it has)."""
        self._stop.set()
        self._wake.set()

    def light(self, mask: int, future: concurrent.futures.Future[bool]) -> None:
        """Send LIGHTS ``mask`` now; answer ``future`` (False: not delivered, the board
        is away, and the mask is sent when it returns)."""
        self._lights = mask
        if self._stop.is_set():
            # Stopping: the thread may have answered its last command already.
            future.set_result(False)
            return
        self._commands.put((mask, future))
        self._wake.set()

    def main(self) -> None:
        """The thread's body."""
        try:
            self._run()
        except Exception:
            _log.exception("sensor board %s: worker failed", self.url)
        finally:
            self._answer_pending(False)
            if isinstance(self._backend, SimUsbBackend):
                self._backend.close()
            self._post(DONE)

    def _backoff(self, attempt: int) -> float:
        return backoff_delay(
            attempt, initial_s=self._reconnect_min_s, cap_s=self._reconnect_max_s, rng=self._rng
        )

    def _post(self, item: object) -> None:
        try:
            self._loop.call_soon_threadsafe(self._deliver, item)
        except RuntimeError:
            # The loop is closed: nobody is listening any more.
            self._stop.set()

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            dev, found = self._open()
            if dev is None or not isinstance(found, BoardOnline):
                self._go_offline(str(found))
                self._pause(self._backoff(attempt))
                attempt += 1
                continue
            try:
                reason, reported = self._serve(dev, found)
            finally:
                self._release(dev)
            if reason is None:
                return
            self._go_offline(reason)
            if reported:
                attempt = 0
            self._pause(self._backoff(attempt))
            attempt += 1

    def _find(self) -> tuple[Any, str]:
        """The device this URL names (VID:PID, and the serial when pinned), or why none."""
        vid, pid = self.target.vid, self.target.pid
        try:
            found = list(
                usb.core.find(idVendor=vid, idProduct=pid, backend=self._backend, find_all=True)
            )
        except (usb.core.USBError, NotImplementedError) as exc:
            return None, f"cannot enumerate USB devices: {exc}"
        if not found:
            return None, f"board {vid:04x}:{pid:04x} not found"
        if self.target.serial is None:
            return found[0], ""
        seen: list[str] = []
        for dev in found:
            # Issue 13: a gadget with the same VID:PID is not the board unless its serial
            # number is the one pinned in the URL.
            serial = self._string(dev, "serial_number")
            if self.target.matches(serial):
                return dev, ""
            seen.append(serial or "(none)")
            self._dispose(dev)
        return None, (
            f"board {vid:04x}:{pid:04x} with serial {self.target.serial!r} not found"
            f" (found serial {', '.join(repr(s) for s in seen)})"
        )

    def _open(self) -> tuple[Any, BoardOnline | str]:
        """Find the board and claim its interface; or say why not."""
        vid, pid = self.target.vid, self.target.pid
        dev, why = self._find()
        if dev is None:
            return None, why
        try:
            try:
                config = dev.get_active_configuration()
            except usb.core.USBError:
                # Not configured yet (libusb reports configuration 0).
                dev.set_configuration()
                config = dev.get_active_configuration()
            interface = config[(INTERFACE, 0)]
            addresses = {ep.bEndpointAddress for ep in interface}
            if not {EP_IN, EP_OUT} <= addresses:
                raise DeviceError(
                    f"interface {INTERFACE} has endpoints {sorted(addresses)}, "
                    f"not {EP_IN:#04x} and {EP_OUT:#04x}"
                )
            with contextlib.suppress(NotImplementedError, usb.core.USBError):
                if dev.is_kernel_driver_active(INTERFACE):
                    dev.detach_kernel_driver(INTERFACE)
            usb.util.claim_interface(dev, INTERFACE)
            online = BoardOnline(self._string(dev, "serial_number"), self._string(dev, "product"))
            if self._lights is not None:
                # The board forgets its lights when unplugged: light them again.
                write_lights(dev, self._lights)
        except (usb.core.USBError, ValueError, IndexError, NotImplementedError, DeviceError) as exc:
            self._dispose(dev)
            return None, f"cannot open board {vid:04x}:{pid:04x}: {exc}"
        self.connects += 1
        return dev, online

    @staticmethod
    def _string(dev: Any, attribute: str) -> str:
        try:
            value = getattr(dev, attribute)
        except (usb.core.USBError, ValueError, NotImplementedError):
            return ""
        return value if isinstance(value, str) else ""

    def _serve(self, dev: Any, online: BoardOnline) -> tuple[str | None, bool]:
        """Read reports until the board is lost (return why) or the client closes (None)."""
        writer = LightsWriter(dev, self._commands, self._stop, f"sensor-board lights {self.url}")
        try:
            return self._read(dev, online, writer)
        finally:
            # What was asked before now is written, or answered False if the board is
            # gone or the client closing; what is asked after is answered False until
            # the board returns (the mask itself is lit again then).
            writer.end()

    def _read(self, dev: Any, online: BoardOnline, writer: LightsWriter) -> tuple[str | None, bool]:
        assembler = SnapshotAssembler()
        last_report = time.monotonic()
        reported = False
        errors_in_row = 0
        while not self._stop.is_set():
            if writer.lost is not None:
                return writer.lost, reported
            silent_s = time.monotonic() - last_report
            if silent_s > self._heartbeat_timeout_s:
                return f"no report for {self._heartbeat_timeout_s:g} s", reported
            try:
                raw = dev.read(EP_IN, MAX_PACKET_BYTES, self._read_slice_ms)
            except usb.core.USBTimeoutError:
                continue
            except usb.core.USBError as exc:
                if gone(exc):
                    return f"unplugged ({exc})", reported
                self.usb_errors += 1
                errors_in_row += 1
                if errors_in_row >= MAX_CONSECUTIVE_USB_ERRORS:
                    return f"{errors_in_row} USB errors in a row, last: {exc}", reported
                continue
            errors_in_row = 0
            data = bytes(raw)
            if _log.isEnabledFor(TRACE):
                _log.log(TRACE, "sensor board IN %s", data.hex())
            try:
                report = parse_in_report(data)
            except BadReport as exc:
                self.bad_reports += 1
                _log.debug("sensor board: skipped a bad report: %s", exc.reason)
                continue
            last_report = time.monotonic()
            self.reports += 1
            if not reported:
                reported = True
                self._go_online(online)
            snapshot = assembler.feed(report)
            if snapshot is not None:
                self._post(snapshot)
        return None, reported

    def _answer_pending(self, result: bool) -> None:
        while True:
            try:
                _, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if future is not None and future.set_running_or_notify_cancel():
                future.set_result(result)

    def _pause(self, delay_s: float) -> None:
        """Wait before the next attempt, answering LIGHTS (not delivered) meanwhile."""
        deadline = time.monotonic() + delay_s
        while not self._stop.is_set():
            self._answer_pending(False)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wake.wait(remaining)
            self._wake.clear()

    def _dispose(self, dev: Any) -> None:
        with contextlib.suppress(usb.core.USBError, ValueError, NotImplementedError):
            usb.util.dispose_resources(dev)

    def _release(self, dev: Any) -> None:
        self._dispose(dev)
        if isinstance(self._backend, SimUsbBackend):
            # A silent board keeps its connection: drop it so that the next
            # search connects afresh, as a replugged device would enumerate anew.
            self._backend.disconnect()

    def _go_offline(self, reason: str) -> None:
        if self._state is _State.OFFLINE:
            _log.debug("sensor board %s still offline: %s", self.url, reason)
            return
        self._state = _State.OFFLINE
        _log.warning("sensor board %s offline: %s", self.url, reason)
        self._post(BoardOffline(reason))

    def _go_online(self, online: BoardOnline) -> None:
        self._state = _State.ONLINE
        _log.info(
            "sensor board %s online: %s (serial %s)", self.url, online.product or "?", online.serial
        )
        self._post(online)
