"""The simulated bet-sensor board, served over TCP as ``simusb://host:port``.

It speaks the wire of DEVICES.md ("The simulated board over TCP") and the
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

``table-controller sim sensors [--listen HOST:PORT] ...`` serves one board: the
first line on stdout is its URL, LIGHTS received are printed as ``lights 0x…``,
and lines on stdin act on it (``spot 1 0 2500``, ``spot 1 0 -``, ``fault 4 on``,
``hang``, ``resume``, ``unplug``, ``replug``, ``clear``, ``state``, ``quit``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

from drivers.sensors.errors import BadReport
from drivers.sensors.frames import (
    MAX_CENTS,
    SPOT_BITS,
    SpotsReport,
    encode_report,
    parse_out_report,
    spot_bit,
    values_reports,
)
from drivers.sensors.simusb import (
    EP_IN,
    EP_OUT,
    BadMessage,
    DeviceMessage,
    PacketMessage,
    decode_message,
    encode_message,
)

_log = logging.getLogger(__name__)

DEFAULT_VID = 0x1209
DEFAULT_PID = 0x0001
DEFAULT_SERIAL = "SIM-SENSORS-0001"
DEFAULT_PRODUCT = "Bet sensor board (simulated)"

HEARTBEAT_S = 0.1
MAX_HEARTBEAT_S = 0.25
"""DEVICES.md: SPOTS is sent on every change and at least every 250 ms."""

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


class SimulatedBoard:
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
        self.rfid = rfid
        self.host = host
        self._port = port
        self.heartbeat_s = heartbeat_s
        self.pad_reports = pad_reports
        self.max_buffered_bytes = max_buffered_bytes
        self.stats = BoardStats()
        self.lights = 0
        self.lights_history: collections.deque[int] = collections.deque(maxlen=LIGHTS_HISTORY)
        self.lights_observers: list[Callable[[int], None]] = []
        self._chips: dict[int, int] = {}
        self._fault = 0
        self._seq = 0
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
    def seq(self) -> int:
        return self._seq

    @property
    def present(self) -> int:
        mask = 0
        for bit in self._chips:
            mask |= 1 << bit
        return mask

    @property
    def fault(self) -> int:
        return self._fault

    @property
    def values(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted(self._chips.items()))

    @property
    def connected(self) -> bool:
        return self._conn is not None

    @property
    def plugged(self) -> bool:
        return self._plugged

    # ------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        if self._heartbeat is not None:
            raise RuntimeError("board already started")
        await self._listen()
        self._heartbeat = asyncio.create_task(
            self._heartbeats(), name=f"sim-sensors-heartbeat:{self._port}"
        )

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

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
        updates: dict[int, int | None] = {}
        for (position, spot), cents in changes.items():
            bit = spot_bit(position, spot)
            if cents is not None and not 0 <= cents <= MAX_CENTS:
                raise ValueError(f"cents must fit in u32, not {cents}")
            updates[bit] = cents
        changed = False
        for bit, cents in updates.items():
            old = self._chips.get(bit)
            if cents is None:
                self._chips.pop(bit, None)
            else:
                self._chips[bit] = cents
            if self.rfid:
                changed |= old != cents
            else:
                changed |= (old is None) != (cents is None)
        if changed:
            self._change()

    def clear(self) -> None:
        """Take every chip off the layout."""
        if self._chips:
            self._chips.clear()
            self._change()

    def set_fault(self, bit: int, on: bool) -> None:
        """Flag (or clear) a spot's sensor as faulty."""
        if not 0 <= bit < SPOT_BITS:
            raise ValueError(f"spot bit must be 0–{SPOT_BITS - 1}, not {bit}")
        fault = self._fault | (1 << bit) if on else self._fault & ~(1 << bit)
        if fault != self._fault:
            self._fault = fault
            self._change()

    def _change(self) -> None:
        self._seq = (self._seq + 1) & 0xFF
        self._send_state()

    # ------------------------------------------------------------- the wire

    def _state_reports(self) -> list[bytes]:
        reports: list[bytes] = []
        if self.rfid:
            reports += [
                encode_report(r, pad=self.pad_reports)
                for r in values_reports(self._seq, self._chips.items())
            ]
        spots = SpotsReport(self._seq, self.present, self._fault)
        reports.append(encode_report(spots, pad=self.pad_reports))
        return reports

    def _send_state(self) -> bool:
        if self._send(self._state_reports()):
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
                spots = SpotsReport(self._seq, self.present, self._fault)
                sent = self._send([encode_report(spots, pad=self.pad_reports)])
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


# ------------------------------------------------------------------------- CLI

DEFAULT_LISTEN = "127.0.0.1:7003"
"""As in the example table configuration of DEVICES.md (``simusb://127.0.0.1:7003``)."""

COMMANDS_HELP = (
    "commands: spot POSITION SPOT CENTS|- | clear | fault BIT on|off | hang | resume"
    " | unplug | replug | state | quit"
)


def _hex16(text: str) -> int:
    try:
        value = int(text, 16)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not 4 hex digits") from exc
    if not 0 <= value <= 0xFFFF:
        raise argparse.ArgumentTypeError(f"{text!r} is not 4 hex digits")
    return value


def _listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, not {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _spot_arg(text: str) -> tuple[int, int, int]:
    parts = text.split(":")
    try:
        numbers = [int(p) for p in parts]
        if len(numbers) == 2:
            numbers.append(100)
        if len(numbers) != 3:
            raise ValueError(text)
        spot_bit(numbers[0], numbers[1])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected POSITION:SPOT[:CENTS] (spot 0 initial, 1 tie, 2 war), not {text!r}"
        ) from exc
    return numbers[0], numbers[1], numbers[2]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``table-controller sim sensors``."""
    with contextlib.suppress(argparse.ArgumentError):
        # Tolerate a caller that already offers --listen for every device.
        parser.add_argument(
            "--listen",
            default=DEFAULT_LISTEN,
            metavar="HOST:PORT",
            help="address to serve simusb:// on (port 0 picks a free one; default %(default)s)",
        )
    parser.add_argument("--vid", type=_hex16, default=DEFAULT_VID, help="USB vendor id (hex)")
    parser.add_argument("--pid", type=_hex16, default=DEFAULT_PID, help="USB product id (hex)")
    parser.add_argument("--serial", default=DEFAULT_SERIAL, help="serial number string")
    parser.add_argument("--product", default=DEFAULT_PRODUCT, help="product string")
    parser.add_argument(
        "--no-rfid",
        dest="rfid",
        action="store_false",
        help="a presence-only board: no VALUES reports",
    )
    parser.add_argument(
        "--heartbeat-ms",
        type=int,
        default=int(HEARTBEAT_S * 1000),
        help="SPOTS heartbeat period, at most 250 ms (default %(default)s)",
    )
    parser.add_argument(
        "--spot",
        action="append",
        type=_spot_arg,
        default=[],
        metavar="POSITION:SPOT[:CENTS]",
        help="chips on a spot at start (repeatable; spot 0 initial, 1 tie, 2 war)",
    )
    parser.add_argument(
        "--no-stdin",
        dest="stdin",
        action="store_false",
        help="do not read commands from stdin",
    )


def board_from_args(args: argparse.Namespace) -> SimulatedBoard:
    listen = args.listen
    host, port = _listen_address(listen) if isinstance(listen, str) else listen
    board = SimulatedBoard(
        vid=args.vid,
        pid=args.pid,
        serial=args.serial,
        product=args.product,
        rfid=args.rfid,
        host=host,
        port=port,
        heartbeat_s=args.heartbeat_ms / 1000,
    )
    if args.spot:
        board.set_spots({(pos, spot): cents for pos, spot, cents in args.spot})
    return board


def describe(board: SimulatedBoard) -> str:
    """One line of the board's state, as the stdin ``state`` command prints it."""
    spots = (
        " ".join(f"{(bit // 3) + 1}/{bit % 3}={cents}" for bit, cents in board.values) or "empty"
    )
    return (
        f"seq {board.seq} spots {spots} fault {board.fault:#x} lights {board.lights:#x}"
        f" {'plugged' if board.plugged else 'unplugged'}"
    )


async def run_command(board: SimulatedBoard, words: list[str]) -> str:
    """Act on one stdin command; return the line to print. Raises ValueError on a bad one."""
    match words:
        case ["spot", position, spot, cents]:
            board.set_spot(int(position), int(spot), None if cents == "-" else int(cents))
        case ["clear"]:
            board.clear()
        case ["fault", bit, ("on" | "off") as state]:
            board.set_fault(int(bit), state == "on")
        case ["hang"]:
            board.mute(True)
        case ["resume"]:
            board.mute(False)
        case ["unplug"]:
            await board.unplug()
        case ["replug"]:
            await board.replug()
        case ["state"]:
            pass
        case _:
            raise ValueError(COMMANDS_HELP)
    return describe(board)


def _say(line: str) -> None:
    print(line, flush=True)


def _read_stdin(loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
    """Lines of stdin into ``lines`` (None at the end). A daemon thread: stdin may be a
    file, a pipe or a terminal, and only a plain blocking read serves all three."""

    def pump() -> None:
        with contextlib.suppress(Exception):
            for line in sys.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line.strip())
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=pump, name="sim-sensors-stdin", daemon=True).start()


async def _obey(
    board: SimulatedBoard, lines: asyncio.Queue[str | None], stop: asyncio.Event
) -> None:
    while (line := await lines.get()) is not None:
        words = line.split()
        if not words:
            continue
        if words[0] in ("quit", "exit"):
            stop.set()
            return
        try:
            _say(await run_command(board, words))
        except ValueError as exc:
            _say(f"error {exc}")


async def serve_from_args(args: argparse.Namespace) -> None:
    """Serve one simulated board until SIGINT/SIGTERM, ``quit`` on stdin, or cancellation.

    The first line on stdout is the URL for the controller's ``[devices] sensors``.
    """
    board = board_from_args(args)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
            signals.append(sig)
    try:
        async with board:
            _say(board.url)
            _log.info("simulated sensor board listening at %s", board.url)
            board.lights_observers.append(lambda mask: _say(f"lights {mask:#x}"))
            tasks: list[asyncio.Task[None]] = []
            if getattr(args, "stdin", True):
                lines: asyncio.Queue[str | None] = asyncio.Queue()
                _read_stdin(loop, lines)
                tasks.append(
                    asyncio.create_task(_obey(board, lines, stop), name="sim-sensors-stdin")
                )
            try:
                await stop.wait()
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
