"""``table-controller sim sensors``: one simulated bet-sensor board, served as ``simusb://``.

The first line on stdout is the board's URL (for the table's ``[devices]
sensors``); LIGHTS received are printed as ``lights 0x…``; lines on stdin act
on the board (``help`` lists them)::

    spot 1 initial 25.00      chips worth $25.00 on position 1's initial spot
    spot 1 tie 500            500 cents ($5.00) on its tie spot
    spot 1 war -              nothing on its war spot any more
    fault 2 initial on        position 2's initial-spot sensor is faulty

Spots are named ``initial``, ``tie`` and ``war`` (or numbered 0, 1, 2, as in
docs/devices.md's bit index); an amount with a decimal point is in dollars, one
without in cents. The board itself is :class:`simulators.board.SimulatedBoard`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import threading

from drivers.errors import BadDeviceUrl
from drivers.sensors.frames import MAX_CENTS, SPOT_BITS, Spot, spot_bit
from drivers.sensors.url import DEFAULT_PID, DEFAULT_VID, parse_usb_id
from simulators.board import DEFAULT_PRODUCT, DEFAULT_SERIAL, HEARTBEAT_S, SimulatedBoard
from simulators.stdin import obey, read_lines, say
from simulators.tcp import parse_listen

__all__ = [
    "COMMANDS_HELP",
    "SimulatedBoard",
    "add_arguments",
    "board_from_args",
    "describe",
    "parse_amount",
    "parse_spot",
    "run_command",
    "serve_from_args",
]

_log = logging.getLogger("simulators.sensors")

DEFAULT_LISTEN = "127.0.0.1:7003"
"""As in the example table configuration of docs/devices.md (``simusb://127.0.0.1:7003``)."""

COMMANDS_HELP = """\
commands:
  spot POSITION SPOT AMOUNT|-    chips on a spot: SPOT initial|tie|war, AMOUNT 25.00 ($)
                                 or 2500 (cents); - takes them off
  clear                          take every chip off the layout
  fault POSITION SPOT on|off     a spot's sensor faulty, or well again (or: fault BIT on|off)
  hang | resume                  the board stops reporting (its connection stays up) / reports again
  unplug | replug                pull the board out (refusing connections) / put it back
  state                          print the board's state
  help                           this list
  quit                           stop the simulator
positions are 1-10; spots: initial (0), tie (1), war (2)"""


def parse_spot(text: str) -> Spot:
    """``initial``, ``tie``, ``war`` (any case) or their numbers 0, 1, 2."""
    word = text.strip().upper()
    if word in Spot.__members__:
        return Spot[word]
    if word in ("0", "1", "2"):
        return Spot(int(word))
    raise ValueError(f"a spot is initial, tie or war (or 0, 1, 2), not {text!r}")


def parse_amount(text: str) -> int:
    """Cents from ``25.00`` / ``25.5`` (dollars: there is a decimal point) or ``2500`` (cents)."""
    whole, point, fraction = text.strip().lstrip("$").partition(".")
    if not whole.isdigit() and not (point and not whole):
        raise ValueError(f"an amount is dollars as 25.00 or cents as 2500, not {text!r}")
    if point:
        if not fraction.isdigit() or len(fraction) > 2:
            raise ValueError(f"an amount in dollars has at most two decimals: {text!r}")
        cents = int(whole or "0") * 100 + int(fraction.ljust(2, "0"))
    else:
        cents = int(whole)
    if not 0 < cents <= MAX_CENTS:
        raise ValueError(f"an amount is more than 0 and at most {MAX_CENTS} cents, not {text!r}")
    return cents


def _position(text: str) -> int:
    if not text.isdigit():
        raise ValueError(f"a position is a number 1-10, not {text!r}")
    return int(text)


def _spot_option(text: str) -> tuple[int, int, int]:
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError(text)
        position, spot = _position(parts[0]), parse_spot(parts[1])
        spot_bit(position, spot)
        cents = parse_amount(parts[2]) if len(parts) == 3 else 100
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected POSITION:SPOT[:AMOUNT] (spot initial, tie or war; amount 25.00 or"
            f" 2500 cents), not {text!r}: {exc}"
        ) from exc
    return position, int(spot), cents


def _hex16(text: str) -> int:
    try:
        return parse_usb_id(text, "--vid/--pid")
    except BadDeviceUrl as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


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
        type=_spot_option,
        default=[],
        metavar="POSITION:SPOT[:AMOUNT]",
        help="chips on a spot at start (repeatable; spot initial, tie or war; amount 25.00"
        " or 2500 cents, default 100 cents)",
    )
    parser.add_argument(
        "--no-stdin",
        dest="stdin",
        action="store_false",
        help="do not read commands from stdin",
    )


def board_from_args(args: argparse.Namespace) -> SimulatedBoard:
    listen = args.listen
    host, port = parse_listen(listen) if isinstance(listen, str) else listen
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
        " ".join(
            f"P{bit // 3 + 1}/{Spot(bit % 3).name.lower()}={cents / 100:.2f}"
            for bit, cents in board.values
        )
        or "empty"
    )
    return (
        f"seq {board.seq} spots {spots} fault {board.fault:#x} lights {board.lights:#x}"
        f" {'plugged' if board.plugged else 'unplugged'}"
    )


def _spot_words(position: str, spot: str) -> tuple[int, Spot]:
    pos, which = _position(position), parse_spot(spot)
    spot_bit(pos, which)  # ValueError naming the range for a position off the board
    return pos, which


async def run_command(board: SimulatedBoard, words: list[str]) -> str:
    """Act on one stdin command; return the line to print. ValueError on a bad one."""
    match [words[0].lower(), *words[1:]]:
        case ["spot", position, spot, amount]:
            pos, which = _spot_words(position, spot)
            board.set_spot(pos, which, None if amount == "-" else parse_amount(amount))
        case ["clear"]:
            board.clear()
        case ["fault", bit, ("on" | "off") as state]:
            if not bit.isdigit() or not 0 <= int(bit) < SPOT_BITS:
                raise ValueError(f"a spot bit is 0-{SPOT_BITS - 1}, not {bit!r}")
            board.set_fault(int(bit), state == "on")
        case ["fault", position, spot, ("on" | "off") as state]:
            board.set_fault(spot_bit(*_spot_words(position, spot)), state == "on")
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
            raise ValueError(f"unknown command {' '.join(words)!r}; 'help' lists them")
    return describe(board)


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
            say(board.url)
            _log.info("simulated sensor board listening at %s", board.url)
            board.lights_observers.append(lambda mask: say(f"lights {mask:#x}"))
            tasks: list[asyncio.Task[None]] = []
            if getattr(args, "stdin", True):
                lines: asyncio.Queue[str | None] = asyncio.Queue()
                read_lines(loop, lines, "sensors")

                async def act(words: list[str]) -> str:
                    return await run_command(board, words)

                tasks.append(
                    asyncio.create_task(
                        obey(act, COMMANDS_HELP, lines, stop), name="sim-sensors-stdin"
                    )
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
