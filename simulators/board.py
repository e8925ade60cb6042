"""The simulated bet-sensor board, served over TCP as ``simusb://host:port``.

It speaks the wire of docs/devices.md ("The simulated board over TCP") and the
board's reports through the driver's own codec, so the real driver — pyusb
over the ``simusb`` backend — reads it exactly as it reads the USB board.

What it does, as a board would:

* introduces itself (``device`` message), then sends its whole state — VALUES
  (when it reads RFID chips) and SPOTS — as soon as a controller connects;
* on every change of the spots, values or faults advances ``seq`` and sends
  the VALUES reports of the new state (split by 12) then SPOTS, all with that
  ``seq``;
* repeats SPOTS as a heartbeat, at least every 250 ms;
* records the LIGHTS masks it receives.

One controller at a time: a new connection replaces the previous one, as a
board moved to another port. ``unplug()`` closes the connection and stops
listening (connections are refused) until ``replug()``.

Test rigs get fault injection: ``mute()`` (a hung board: connected but silent),
``inject_in()`` (any IN packet, well formed or not) and ``inject_line()`` (any
line on the wire).

``table-controller sim sensors`` (:mod:`simulators.sensors`) serves one board
from the command line.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from drivers.errors import BadMessage, BadReport
from drivers.lifecycle import AsyncResource
from drivers.sensors.frames import (
    parse_out_report,
)
from drivers.sensors.simusb import (
    EP_IN,
    EP_OUT,
    DeviceMessage,
    PacketMessage,
    decode_message,
    encode_message,
)
from drivers.sensors.url import DEFAULT_PID, DEFAULT_VID
from simulators.layout import Layout

_log = logging.getLogger("simulators.sensors")

DEFAULT_SERIAL = "SIM-SENSORS-0001"
DEFAULT_PRODUCT = "Bet sensor board (simulated)"

HEARTBEAT_S = 0.1
MAX_HEARTBEAT_S = 0.25
"""docs/devices.md: SPOTS is sent on every change and at least every 250 ms."""

MAX_BUFFERED_BYTES = 256 * 1024
"""A controller that stops reading makes the board drop reports beyond this (then resync)."""

LIGHTS_HISTORY = 1024


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    peer: str = field(default="?")


@dataclass(slots=True)
class BoardStats:
    """What the board saw; counters only grow."""

    connections: int = 0
    reports_sent: int = 0
    heartbeats_sent: int = 0
    dropped_reports: int = 0
    bad_messages: int = 0


class SimulatedBoard(AsyncResource):
    """A bet-sensor board reachable at :attr:`url` (``simusb://127.0.0.1:PORT``).

    Every method runs on the event loop's thread.
    """

    def __init__(
        self,
        *,
        vid: int = DEFAULT_VID,
        pid: int = DEFAULT_PID,
        serial: str = DEFAULT_SERIAL,
        product: str = DEFAULT_PRODUCT,
        rfid: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        heartbeat_s: float = HEARTBEAT_S,
        pad_reports: bool = False,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
    ) -> None:
        if not 0 < heartbeat_s <= MAX_HEARTBEAT_S:
            raise ValueError(f"heartbeat_s must be in (0, {MAX_HEARTBEAT_S}], not {heartbeat_s}")
        self.identity = DeviceMessage(vid, pid, serial, product)
        self.layout = Layout(rfid=rfid)
        self.host = host
        self._port = port
        self.heartbeat_s = heartbeat_s
        self.pad_reports = pad_reports
        self.max_buffered_bytes = max_buffered_bytes
        self.stats = BoardStats()
        self.lights = 0
        self.lights_history: collections.deque[int] = collections.deque(maxlen=LIGHTS_HISTORY)
        self.lights_observers: list[Callable[[int], None]] = []
        self._muted = False
        self._resync = False
        self._plugged = False
        self._server: asyncio.Server | None = None
        self._conn: _Connection | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._heartbeat: asyncio.Task[None] | None = None
        self._tick = asyncio.Event()

    # ------------------------------------------------------------ state views

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"simusb://{host}:{self._port}"

    @property
    def rfid(self) -> bool:
        """Whether the board reads RFID chips (sends VALUES); False: presence only."""
        return self.layout.rfid

    @property
    def seq(self) -> int:
        return self.layout.seq

    @property
    def present(self) -> int:
        return self.layout.present

    @property
    def fault(self) -> int:
        return self.layout.fault

    @property
    def values(self) -> tuple[tuple[int, int], ...]:
        return self.layout.values

    @property
    def connected(self) -> bool:
        return self._conn is not None

    @property
    def plugged(self) -> bool:
        return self._plugged

    # ------------------------------------------------------------- lifecycle

    async def open(self) -> None:
        """Listen and start the heartbeats (``async with`` does this)."""
        await self.start()

    async def start(self) -> None:
        """Listen and start the heartbeats."""
        if self._heartbeat is not None:
            raise RuntimeError("board already started")
        await self._listen()
        self._heartbeat = asyncio.create_task(
            self._heartbeats(), name=f"sim-sensors-heartbeat:{self._port}"
        )

    async def close(self) -> None:
        await self.unplug()
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def unplug(self) -> None:
        """Close the connection and refuse new ones, as a board pulled from its port.

        Without power the board's lights go out; the chips stay where they are.
        """
        self._plugged = False
        self.lights = 0
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
        conn = self._conn
        if conn is not None:
            conn.writer.close()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)

    async def replug(self) -> None:
        """Listen again on the same port; the controller finds the board anew."""
        if self._plugged:
            return
        await self._listen()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._on_connect, self.host, self._port)
        self._port = self._server.sockets[0].getsockname()[1]
        self._plugged = True

    # ------------------------------------------------------------ the layout

    def set_spot(self, position: int, spot: int, cents: int | None) -> None:
        """Put chips worth ``cents`` on a spot, or clear it with ``None``."""
        self.set_spots({(position, spot): cents})

    def set_spots(self, changes: Mapping[tuple[int, int], int | None]) -> None:
        """Change several spots at once: one change, one ``seq``."""
        if self.layout.set_spots(changes):
            self._send_state()

    def clear(self) -> None:
        """Take every chip off the layout."""
        if self.layout.clear():
            self._send_state()

    def set_fault(self, bit: int, on: bool) -> None:
        """Flag (or clear) a spot's sensor as faulty."""
        if self.layout.set_fault(bit, on):
            self._send_state()

    # ------------------------------------------------------------- the wire

    def _send_state(self) -> bool:
        if self._send(self.layout.state_reports(pad=self.pad_reports)):
            self._resync = False
            return True
        return False

    def _send(self, packets: list[bytes]) -> bool:
        conn = self._conn
        if conn is None or conn.writer.is_closing():
            return False
        if self._muted or conn.writer.transport.get_write_buffer_size() > self.max_buffered_bytes:
            # The controller missed these; it gets the whole state again later.
            self._resync = True
            self.stats.dropped_reports += len(packets)
            return False
        conn.writer.write(b"".join(encode_message(PacketMessage("in", EP_IN, p)) for p in packets))
        self.stats.reports_sent += len(packets)
        return True

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            if self._conn is None or self._muted:
                continue
            if self._resync:
                sent = self._send_state()
            else:
                sent = self._send([self.layout.heartbeat_report(pad=self.pad_reports)])
            if sent:
                self.stats.heartbeats_sent += 1
                self._notify()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            if not self._plugged:
                return
            previous = self._conn
            if previous is not None:
                previous.writer.close()
            peer = writer.get_extra_info("peername")
            conn = self._conn = _Connection(reader, writer, str(peer))
            self.stats.connections += 1
            _log.info("simulated sensor board: controller %s connected", conn.peer)
            writer.write(encode_message(self.identity))
            self._send_state()
            self._notify()
            await self._read_from(conn)
        finally:
            if self._conn is not None and self._conn.writer is writer:
                self._conn = None
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            if task is not None:
                self._handlers.discard(task)
            self._notify()

    async def _read_from(self, conn: _Connection) -> None:
        while True:
            try:
                line = await conn.reader.readline()
            except ValueError:
                # An over-long line: the stream reader dropped it.
                self.stats.bad_messages += 1
                continue
            except OSError:
                return
            if not line:
                return
            self._on_line(line)

    def _on_line(self, line: bytes) -> None:
        try:
            message = decode_message(line)
        except BadMessage:
            self.stats.bad_messages += 1
            return
        if not (
            isinstance(message, PacketMessage)
            and message.direction == "out"
            and message.ep == EP_OUT
        ):
            self.stats.bad_messages += 1
            return
        try:
            lights = parse_out_report(message.data)
        except BadReport:
            self.stats.bad_messages += 1
            return
        self.lights = lights.mask
        self.lights_history.append(lights.mask)
        for observer in self.lights_observers:
            observer(lights.mask)
        self._notify()

    # ---------------------------------------------------------- waiting, faults

    def _notify(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    async def _wait(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._tick.wait()

    async def wait_lights(self, mask: int) -> None:
        """Return once the last LIGHTS received is ``mask``."""
        await self._wait(lambda: self.lights == mask)

    async def wait_heartbeats(self, count: int) -> None:
        """Return once ``count`` more heartbeats have been sent."""
        target = self.stats.heartbeats_sent + count
        await self._wait(lambda: self.stats.heartbeats_sent >= target)

    async def wait_connected(self) -> None:
        await self._wait(lambda: self._conn is not None)

    def mute(self, on: bool = True) -> None:
        """A hung board: the connection stays up, no report is sent (changes still count)."""
        self._muted = on
        if not on:
            self._resync = True

    def inject_in(self, data: bytes) -> None:
        """Send any interrupt IN packet, well formed or not."""
        conn = self._conn
        if conn is not None and not conn.writer.is_closing():
            conn.writer.write(encode_message(PacketMessage("in", EP_IN, bytes(data))))

    def inject_line(self, line: bytes) -> None:
        """Send raw bytes on the wire (a newline is not added)."""
        conn = self._conn
        if conn is not None and not conn.writer.is_closing():
            conn.writer.write(line)
