"""The bet-sensor board driver.

``async with SensorBoardClient(url) as board: async for event in board: ...``

URLs:

* ``usb://VID:PID`` — the real board through libusb (``usb://`` alone means
  ``usb://1209:0001``, the default of DEVICES.md);
* ``simusb://host:port`` — a simulated board or test rig over TCP, through the
  :mod:`drivers.sensors.simusb` backend. Either way the same pyusb calls run.

Threads: pyusb is blocking, so every pyusb call of one board runs on one
worker thread that this client owns (STYLE.md, convention 5). The thread
reads the interrupt IN endpoint in short slices, between which it writes any
LIGHTS asked for, and hands events to the event loop with
``call_soon_threadsafe``. Closing the client stops and joins the thread and
releases the device; nothing stays open.

Events (all frozen dataclasses, see :mod:`drivers.sensors.protocol`):

* :class:`SpotsSnapshot` whenever the spots, faults or values change, and once
  after every (re)connection even if nothing changed; heartbeats that repeat
  the last report produce nothing;
* :class:`BoardOnline` once the board is found, opened and reporting;
* :class:`BoardOffline` once when it is lost: ``ENODEV`` (unplugged), no valid
  report for ``heartbeat_timeout_s`` (3 s, DEVICES.md / GAME.md
  ``DEVICE_OFFLINE``), repeated USB errors, or not found at start.

While offline the worker looks for the board again by VID:PID with capped,
jittered backoff, for as long as the client is open. The loss is logged once
at WARNING and the return once at INFO; raw reports only at TRACE (level 5).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import errno
import logging
import queue
import random
import threading
import time
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

import usb.core
import usb.util

from drivers.sensors.errors import (
    BackendUnavailable,
    BadReport,
    DeviceError,
    DeviceTimeout,
    TransportError,
)
from drivers.sensors.frames import (
    MAX_PACKET_BYTES,
    SPOT_BITS,
    SPOT_MASK,
    LightsReport,
    encode_report,
    parse_in_report,
)
from drivers.sensors.protocol import (
    BoardOffline,
    BoardOnline,
    SensorEvent,
    SnapshotAssembler,
    SpotsSnapshot,
)
from drivers.sensors.simusb import SimUsbBackend
from drivers.sensors.simusb import parse_url as parse_simusb_url

_log = logging.getLogger(__name__)

TRACE = 5
"""Log level of raw report bytes (below DEBUG)."""

DEFAULT_VID = 0x1209
DEFAULT_PID = 0x0001
INTERFACE = 0
EP_IN = 0x81
EP_OUT = 0x01

HEARTBEAT_TIMEOUT_S = 3.0
"""No valid report for this long and the board counts as offline (GAME.md, DEVICE_OFFLINE)."""

RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 2.0
"""Backoff between attempts to find the board again: doubling, capped, jittered."""

READ_SLICE_MS = 50
"""Each interrupt read waits at most this long, so LIGHTS and closing are served promptly."""

WRITE_TIMEOUT_MS = 1000
MAX_PENDING_EVENTS = 4096
"""Events waiting for the consumer; beyond this the oldest snapshots are dropped (counted)."""

MAX_CONSECUTIVE_USB_ERRORS = 10
"""A board failing this many transfers in a row is treated as lost and found again."""


@dataclass(frozen=True, slots=True)
class SensorUrl:
    """A parsed sensor-board URL."""

    scheme: Literal["usb", "simusb"]
    vid: int
    pid: int
    host: str = ""
    port: int = 0


def _hex16(text: str, what: str, url: str) -> int:
    try:
        value = int(text, 16)
    except ValueError as exc:
        raise ValueError(f"{what} must be 4 hex digits in {url!r}") from exc
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f"{what} must be 4 hex digits in {url!r}")
    return value


def parse_sensor_url(url: str, *, vid: int | None = None, pid: int | None = None) -> SensorUrl:
    """``usb://VID:PID`` (hex) or ``simusb://host:port``; ``vid``/``pid`` override the URL's."""
    scheme = urlsplit(url).scheme
    if scheme == "usb":
        netloc = urlsplit(url).netloc
        url_vid, url_pid = DEFAULT_VID, DEFAULT_PID
        if netloc:
            vid_text, sep, pid_text = netloc.partition(":")
            if not sep:
                raise ValueError(f"expected usb://VID:PID, not {url!r}")
            url_vid = _hex16(vid_text, "VID", url)
            url_pid = _hex16(pid_text, "PID", url)
        return SensorUrl("usb", url_vid if vid is None else vid, url_pid if pid is None else pid)
    if scheme == "simusb":
        host, port = parse_simusb_url(url)
        return SensorUrl(
            "simusb",
            DEFAULT_VID if vid is None else vid,
            DEFAULT_PID if pid is None else pid,
            host,
            port,
        )
    raise ValueError(f"a sensor board URL is usb://VID:PID or simusb://host:port, not {url!r}")


@dataclass(frozen=True, slots=True)
class SensorLinkStats:
    """Counters of one client since it was opened."""

    reports: int
    bad_reports: int
    usb_errors: int
    connects: int
    dropped_events: int
    skipped_lines: int


class _State(Enum):
    UNKNOWN = "unknown"
    ONLINE = "online"
    OFFLINE = "offline"


_DONE = object()

_LightsCommand = tuple[int, "concurrent.futures.Future[bool]"]


def _gone(exc: usb.core.USBError) -> bool:
    """True when libusb says the device is no longer there."""
    return exc.errno in (errno.ENODEV, errno.ENXIO) or exc.backend_error_code == -4


class SensorBoardClient:
    """Driver of one bet-sensor board. Reusable, not re-entrant."""

    def __init__(
        self,
        url: str,
        *,
        vid: int | None = None,
        pid: int | None = None,
        heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
        reconnect_min_s: float = RECONNECT_MIN_S,
        reconnect_max_s: float = RECONNECT_MAX_S,
        read_slice_ms: int = READ_SLICE_MS,
        max_pending_events: int = MAX_PENDING_EVENTS,
        rng: random.Random | None = None,
    ) -> None:
        self.url = url
        self.target = parse_sensor_url(url, vid=vid, pid=pid)
        if heartbeat_timeout_s <= 0 or reconnect_min_s <= 0 or reconnect_max_s < reconnect_min_s:
            raise ValueError("timeouts must be positive and reconnect_max_s ≥ reconnect_min_s")
        self._heartbeat_timeout_s = heartbeat_timeout_s
        self._reconnect_min_s = reconnect_min_s
        self._reconnect_max_s = reconnect_max_s
        self._read_slice_ms = max(1, read_slice_ms)
        self._max_pending = max(2, max_pending_events)
        self._rng = rng or random.Random()

        # Loop side.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._events: collections.deque[SensorEvent] = collections.deque()
        self._available: asyncio.Event | None = None
        self._done: asyncio.Future[None] | None = None
        self._running = False
        self._online = False

        # Shared with the worker (plain attributes, written by one side only).
        self._thread: threading.Thread | None = None
        self._backend: Any = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._commands: queue.SimpleQueue[_LightsCommand] = queue.SimpleQueue()
        self._lights: int | None = None
        self._state = _State.UNKNOWN
        self._reports = 0
        self._bad_reports = 0
        self._usb_errors = 0
        self._connects = 0
        self._dropped_events = 0

    # ------------------------------------------------------------------ public

    @property
    def online(self) -> bool:
        """Whether the last event delivered said the board is online."""
        return self._online

    @property
    def stats(self) -> SensorLinkStats:
        skipped = 0
        if isinstance(self._backend, SimUsbBackend):
            s = self._backend.stats
            skipped = s.bad_lines + s.unexpected_messages + s.overlong_lines
        return SensorLinkStats(
            reports=self._reports,
            bad_reports=self._bad_reports,
            usb_errors=self._usb_errors,
            connects=self._connects,
            dropped_events=self._dropped_events,
            skipped_lines=skipped,
        )

    async def __aenter__(self) -> Self:
        if self._running or self._thread is not None:
            raise RuntimeError("SensorBoardClient is already open")
        self._backend = self._make_backend()
        self._loop = asyncio.get_running_loop()
        self._events.clear()
        self._available = asyncio.Event()
        self._done = self._loop.create_future()
        self._stop.clear()
        self._wake.clear()
        self._state = _State.UNKNOWN
        self._online = False
        self._running = True
        self._thread = threading.Thread(
            target=self._worker_main, name=f"sensor-board {self.url}", daemon=True
        )
        self._thread.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the worker, release the device and end iteration."""
        thread, done = self._thread, self._done
        if thread is None or done is None:
            return
        self._stop.set()
        self._wake.set()
        await done
        thread.join()
        self._thread = None
        self._finish()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SensorEvent:
        while True:
            if self._events:
                return self._events.popleft()
            if not self._running or self._available is None:
                raise StopAsyncIteration
            self._available.clear()
            await self._available.wait()

    async def set_lights(self, mask: int) -> bool:
        """Light these spots on the layout (LIGHTS, DEVICES.md).

        Returns True once the board has taken the report, False when the board
        is offline: the mask is kept and sent again whenever the board returns.
        Raises :class:`DeviceTimeout` if the board does not take it in time and
        :class:`TransportError` on another USB failure (both: may retry).
        """
        if not 0 <= mask <= SPOT_MASK:
            raise ValueError(f"a LIGHTS mask uses spot bits 0–{SPOT_BITS - 1} only, not {mask:#x}")
        if not self._running:
            raise RuntimeError("SensorBoardClient is not open")
        self._lights = mask
        future: concurrent.futures.Future[bool] = concurrent.futures.Future()
        self._commands.put((mask, future))
        self._wake.set()
        return await asyncio.wrap_future(future)

    # ---------------------------------------------------------------- loop side

    def _make_backend(self) -> Any:
        if self.target.scheme == "simusb":
            return SimUsbBackend(self.target.host, self.target.port)
        import usb.backend.libusb1

        backend = usb.backend.libusb1.get_backend()
        if backend is None:
            raise BackendUnavailable(
                f"{self.url}: libusb 1.0 is not available; install it (libusb-1.0-0) "
                "or use a simusb:// URL"
            )
        return backend

    def _deliver(self, item: object) -> None:
        if item is _DONE:
            if self._done is not None and not self._done.done():
                self._done.set_result(None)
            return
        if not isinstance(item, SpotsSnapshot | BoardOnline | BoardOffline):
            return
        if isinstance(item, BoardOnline):
            self._online = True
        elif isinstance(item, BoardOffline):
            self._online = False
        if len(self._events) >= self._max_pending:
            self._drop_oldest_snapshot()
        self._events.append(item)
        if self._available is not None:
            self._available.set()

    def _drop_oldest_snapshot(self) -> None:
        # A snapshot is the whole layout, so a later one supersedes it; the
        # online/offline transitions are few and always kept.
        for index, event in enumerate(self._events):
            if isinstance(event, SpotsSnapshot):
                del self._events[index]
                break
        else:
            self._events.popleft()
        self._dropped_events += 1

    def _finish(self) -> None:
        self._running = False
        if isinstance(self._backend, SimUsbBackend):
            self._backend.close()
        if self._available is not None:
            self._available.set()

    # -------------------------------------------------------------- worker side

    def _post(self, item: object) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._deliver, item)
        except RuntimeError:
            # The loop is closed: nobody is listening any more.
            self._stop.set()

    def _worker_main(self) -> None:
        try:
            self._run()
        except Exception:
            _log.exception("sensor board %s: worker failed", self.url)
        finally:
            self._answer_pending(False)
            if isinstance(self._backend, SimUsbBackend):
                self._backend.close()
            self._post(_DONE)

    def _backoff(self, attempt: int) -> float:
        base = min(self._reconnect_max_s, self._reconnect_min_s * 2.0 ** min(attempt, 30))
        return base * self._rng.uniform(0.5, 1.0)

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

    def _open(self) -> tuple[Any, BoardOnline | str]:
        """Find the board by VID:PID and claim its interface; or say why not."""
        vid, pid = self.target.vid, self.target.pid
        try:
            dev = usb.core.find(idVendor=vid, idProduct=pid, backend=self._backend)
        except (usb.core.USBError, NotImplementedError) as exc:
            return None, f"cannot enumerate USB devices: {exc}"
        if dev is None:
            return None, f"board {vid:04x}:{pid:04x} not found"
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
                dev.write(EP_OUT, encode_report(LightsReport(self._lights)), WRITE_TIMEOUT_MS)
        except (usb.core.USBError, ValueError, IndexError, NotImplementedError, DeviceError) as exc:
            self._dispose(dev)
            return None, f"cannot open board {vid:04x}:{pid:04x}: {exc}"
        self._connects += 1
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
        assembler = SnapshotAssembler()
        last_report = time.monotonic()
        reported = False
        errors_in_row = 0
        while not self._stop.is_set():
            lost = self._serve_commands(dev)
            if lost is not None:
                return lost, reported
            silent_s = time.monotonic() - last_report
            if silent_s > self._heartbeat_timeout_s:
                return f"no report for {self._heartbeat_timeout_s:g} s", reported
            try:
                raw = dev.read(EP_IN, MAX_PACKET_BYTES, self._read_slice_ms)
            except usb.core.USBTimeoutError:
                continue
            except usb.core.USBError as exc:
                if _gone(exc):
                    return f"unplugged ({exc})", reported
                self._usb_errors += 1
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
                self._bad_reports += 1
                _log.debug("sensor board: skipped a bad report: %s", exc.reason)
                continue
            last_report = time.monotonic()
            self._reports += 1
            if not reported:
                reported = True
                self._go_online(online)
            snapshot = assembler.feed(report)
            if snapshot is not None:
                self._post(snapshot)
        return None, reported

    def _serve_commands(self, dev: Any) -> str | None:
        """Write the LIGHTS asked for; return a reason if the board turned out to be gone."""
        while True:
            try:
                mask, future = self._commands.get_nowait()
            except queue.Empty:
                return None
            if not future.set_running_or_notify_cancel():
                continue
            data = encode_report(LightsReport(mask))
            if _log.isEnabledFor(TRACE):
                _log.log(TRACE, "sensor board OUT %s", data.hex())
            try:
                dev.write(EP_OUT, data, WRITE_TIMEOUT_MS)
            except usb.core.USBTimeoutError as exc:
                err: Exception = DeviceTimeout(f"the board did not take LIGHTS {mask:#x}: {exc}")
                err.__cause__ = exc
                future.set_exception(err)
            except usb.core.USBError as exc:
                if _gone(exc):
                    future.set_result(False)
                    return f"unplugged ({exc})"
                err = TransportError(f"LIGHTS {mask:#x} failed: {exc}")
                err.__cause__ = exc
                future.set_exception(err)
            else:
                future.set_result(True)

    def _answer_pending(self, result: bool) -> None:
        while True:
            try:
                _, future = self._commands.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
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
