"""The bet-sensor board driver.

``async with SensorBoardClient(url) as board: async for event in board: ...``

URLs (:mod:`drivers.sensors.url`): ``usb://VID:PID[?serial=…]`` for the real
board through libusb, ``simusb://host:port`` for a simulated board or test rig
over TCP (:mod:`drivers.sensors.simusb`). Either way the same pyusb calls run.

Threads: pyusb is blocking, so one worker thread that this client owns finds
the board and reads it (:mod:`drivers.sensors.worker`), and while the board is
plugged in a second one writes its LIGHTS (:mod:`drivers.sensors.lights`). The
client is the loop side: it starts and joins the worker, queues its events for
``async for`` and hands it LIGHTS. Closing the client stops and joins both
threads and releases the device; nothing stays open.

Events (all frozen dataclasses, see :mod:`drivers.sensors.protocol`):

* :class:`SpotsSnapshot` whenever the spots, faults or values change, and once
  after every (re)connection even if nothing changed; heartbeats that repeat
  the last report produce nothing;
* :class:`BoardOnline` once the board is found, opened and reporting;
* :class:`BoardOffline` once when it is lost: ``ENODEV`` (unplugged), no valid
  report for ``heartbeat_timeout_s`` (3 s, docs/devices.md / docs/rules.md
  ``DEVICE_OFFLINE``), repeated USB errors, or not found at start.

While offline the worker looks for the board again by VID:PID (and the pinned
serial number) with capped,
jittered backoff, for as long as the client is open. The loss is logged once
at WARNING and the return once at INFO; raw reports only at TRACE (level 5).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import random
import threading
from dataclasses import dataclass
from typing import Any, Self

from drivers.errors import BackendUnavailable
from drivers.lifecycle import AsyncResource
from drivers.sensors.frames import SPOT_BITS, SPOT_MASK
from drivers.sensors.protocol import BoardOffline, BoardOnline, SensorEvent, SpotsSnapshot
from drivers.sensors.simusb import SimUsbBackend
from drivers.sensors.url import SensorUrl, parse_sensor_url
from drivers.sensors.worker import DONE, BoardWorker

__all__ = ["SensorBoardClient", "SensorLinkStats", "SensorUrl", "parse_sensor_url"]

HEARTBEAT_TIMEOUT_S = 3.0
"""No valid report for this long and the board counts as offline (docs/rules.md, DEVICE_OFFLINE)."""

RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 2.0
"""Backoff between attempts to find the board again: doubling, capped, jittered."""

READ_SLICE_MS = 250
"""Each interrupt read waits at most this long, so that closing and a silent board are
noticed; a board reports at least every 250 ms (docs/devices.md), so a read seldom
runs out. LIGHTS do not wait for it: they have a thread of their own."""

MAX_PENDING_EVENTS = 4096
"""Events waiting for the consumer; beyond this the oldest snapshots are dropped (counted)."""


@dataclass(frozen=True, slots=True)
class SensorLinkStats:
    """Counters of one client since it was made."""

    reports: int
    bad_reports: int
    usb_errors: int
    connects: int
    dropped_events: int
    skipped_lines: int


class SensorBoardClient(AsyncResource):
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

        self._thread: threading.Thread | None = None
        self._worker: BoardWorker | None = None
        self._backend: Any = None
        self._lights: int | None = None
        """The last mask asked for: lit again on every reconnection, and by the next worker."""
        self._serial: str | None = None
        self._dropped_events = 0
        self._counts = (0, 0, 0, 0)
        """reports, bad reports, USB errors, connects of the workers already finished."""

    # ------------------------------------------------------------------ public

    @property
    def online(self) -> bool:
        """Whether the last event delivered said the board is online."""
        return self._online

    @property
    def serial_pinned(self) -> bool:
        """Whether the URL pins the board's serial number (``?serial=…``): without it any
        device with the VID:PID is taken, so the table should warn (issue 13)."""
        return self.target.serial_pinned

    @property
    def serial(self) -> str | None:
        """The serial number of the board in use (from its last ``BoardOnline``), None before."""
        return self._serial

    @property
    def stats(self) -> SensorLinkStats:
        skipped = 0
        if isinstance(self._backend, SimUsbBackend):
            s = self._backend.stats
            skipped = s.bad_lines + s.unexpected_messages + s.overlong_lines
        reports, bad, errors, connects = self._counts
        worker = self._worker
        if worker is not None:
            reports += worker.reports
            bad += worker.bad_reports
            errors += worker.usb_errors
            connects += worker.connects
        return SensorLinkStats(
            reports=reports,
            bad_reports=bad,
            usb_errors=errors,
            connects=connects,
            dropped_events=self._dropped_events,
            skipped_lines=skipped,
        )

    async def open(self) -> None:
        """Start the worker thread: it finds the board and reports (``async with`` does this)."""
        if self._running or self._thread is not None:
            raise RuntimeError("SensorBoardClient is already open")
        self._backend = self._make_backend()
        self._loop = asyncio.get_running_loop()
        self._events.clear()
        self._available = asyncio.Event()
        self._done = self._loop.create_future()
        self._online = False
        self._running = True
        self._worker = BoardWorker(
            self.url,
            self.target,
            self._backend,
            self._loop,
            self._deliver,
            heartbeat_timeout_s=self._heartbeat_timeout_s,
            reconnect_min_s=self._reconnect_min_s,
            reconnect_max_s=self._reconnect_max_s,
            read_slice_ms=self._read_slice_ms,
            rng=self._rng,
            lights=self._lights,
        )
        self._thread = threading.Thread(
            target=self._worker.main, name=f"sensor-board {self.url}", daemon=True
        )
        self._thread.start()

    async def close(self) -> None:
        """Stop the worker, release the device and end iteration."""
        thread, done, worker = self._thread, self._done, self._worker
        if thread is None or done is None or worker is None:
            return
        worker.stop()
        await done
        thread.join()
        self._thread = None
        self._counts = (
            self._counts[0] + worker.reports,
            self._counts[1] + worker.bad_reports,
            self._counts[2] + worker.usb_errors,
            self._counts[3] + worker.connects,
        )
        self._worker = None
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
        """Light these spots on the layout (LIGHTS, docs/devices.md).

        Returns True once the board has taken the report, False when the board
        is offline: the mask is kept and sent again whenever the board returns.
        Raises :class:`DeviceTimeout` if the board does not take it in time and
        :class:`TransportError` on another USB failure (both: may retry).
        """
        if not 0 <= mask <= SPOT_MASK:
            raise ValueError(f"a LIGHTS mask uses spot bits 0–{SPOT_BITS - 1} only, not {mask:#x}")
        worker = self._worker
        if not self._running or worker is None:
            raise RuntimeError("SensorBoardClient is not open")
        self._lights = mask
        future: concurrent.futures.Future[bool] = concurrent.futures.Future()
        worker.light(mask, future)
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
        if item is DONE:
            if self._done is not None and not self._done.done():
                self._done.set_result(None)
            return
        if not isinstance(item, SpotsSnapshot | BoardOnline | BoardOffline):
            return
        if isinstance(item, BoardOnline):
            self._online = True
            self._serial = item.serial or None
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
