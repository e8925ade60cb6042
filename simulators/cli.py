"""``table-controller sim shoe|console|sensors``: one simulated device for a test rig.

The shoe and the console are served on ``--listen HOST:PORT`` (the driver opens
``socket://HOST:PORT``), on a pty (``--pty``; the driver opens the path
printed), or on a serial line the simulator opens itself (``--port URL``, any
pyserial URL or device path, with ``--baud``, ``--bytesize``, ``--parity`` and
``--stopbits``): the far end of a rig's cable to a table PC. The first line
on stdout is the URL to open (the port itself with ``--port``); losing and
finding the line again is logged on stderr. Lines on stdin act on the device
(``help`` lists them), so a rig, or a person at a terminal, can deal cards and
press buttons:

    shoe:     draw [CARD] | misread | drop | door | jam | fault | ok | power | shuffle
    console:  press ACTION [ARG] | restart
    both:     hang | resume | unplug | replug | help | quit

``sensors`` is handed to :mod:`simulators.sensors` with the rest of the
command line, imported only when chosen.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from drivers.transport import DEFAULT_BAUDRATE
from simulators.commands import console_commands, shoe_commands
from simulators.console import ConsoleSimulator
from simulators.errors import FrameFieldError, LineSettingsError
from simulators.port import BYTESIZES, PARITIES, STOPBITS
from simulators.serve import serve_on_port
from simulators.shoe import DEFAULT_SERIAL, ShoeFaults, ShoeSimulator, check_identity
from simulators.stdin import obey, read_lines, say
from simulators.tcp import parse_listen

DEVICES = ("shoe", "console", "sensors")
DEFAULT_PORTS = {"shoe": 7001, "console": 7002}
"""As in the example table configuration of docs/devices.md."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("device", choices=DEVICES, help="which device to simulate")
    parser.add_argument(
        "options",
        nargs=argparse.REMAINDER,
        help="the device's own options (table-controller sim DEVICE --help)",
    )


def run(args: argparse.Namespace) -> int:
    device: str = args.device
    # Losing and finding the line again is news for whoever watches the rig: stderr.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    if device == "sensors":
        module = importlib.import_module("simulators.sensors")
        parser = argparse.ArgumentParser(prog="table-controller sim sensors")
        module.add_arguments(parser)
        return _run_async(module.serve_from_args(parser.parse_args(args.options)))
    parser = argparse.ArgumentParser(prog=f"table-controller sim {device}")
    _add_common(parser, device)
    if device == "shoe":
        _add_shoe(parser)
    options = parser.parse_args(args.options)
    return _run_async(_serve(device, options))


def _add_common(parser: argparse.ArgumentParser, device: str) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=f"127.0.0.1:{DEFAULT_PORTS[device]}",
        help="TCP address to serve on (default %(default)s; port 0 picks a free one)",
    )
    where.add_argument("--pty", action="store_true", help="serve on a pty instead of TCP")
    where.add_argument(
        "--port",
        metavar="URL",
        help="speak on this serial line instead: a device path (/dev/ttyUSB1) or any pyserial"
        " URL (rfc2217://HOST:PORT, socket://HOST:PORT); reopened whenever it comes back",
    )
    line = parser.add_argument_group("line settings (with --port)")
    line.add_argument(
        "--baud", type=int, default=DEFAULT_BAUDRATE, help="bits per second (default %(default)s)"
    )
    line.add_argument(
        "--bytesize", type=int, default=8, choices=BYTESIZES, help="data bits (default 8)"
    )
    line.add_argument(
        "--parity", default="N", choices=PARITIES, type=str.upper, help="parity (default N)"
    )
    line.add_argument(
        "--stopbits", type=float, default=1, choices=STOPBITS, help="stop bits (default 1)"
    )
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=0.5,
        metavar="S",
        help="seconds between STATUS heartbeats (default %(default)s)",
    )


def _add_shoe(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--decks", type=int, default=6, help="decks in the shoe (default 6)")
    parser.add_argument("--seed", type=int, help="shuffle and fault seed (default: random)")
    parser.add_argument(
        "--penetration",
        type=float,
        default=0.75,
        help="fraction of the cards before the cover card (default %(default)s)",
    )
    parser.add_argument(
        "--serial", type=_serial, default=DEFAULT_SERIAL, help="serial number in HELLO"
    )
    parser.add_argument("--auto-draw", type=float, metavar="S", help="draw a card every S seconds")
    for name, help_ in (
        ("misread", "probability that a card is misread"),
        ("drop", "probability that a read's frame is lost"),
        ("garbage", "probability of noise bytes before a frame"),
        ("bad-checksum", "probability that a frame has a wrong checksum"),
    ):
        parser.add_argument(f"--{name}", type=float, default=0.0, metavar="P", help=help_)


def _serial(text: str) -> str:
    """``--serial``: a field of HELLO (no comma, '$', '*' or control character)."""
    try:
        check_identity(text)
    except FrameFieldError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _run_async(main: Coroutine[Any, Any, None]) -> int:
    try:
        asyncio.run(main)
    except KeyboardInterrupt:
        return 130
    return 0


def _make(device: str, options: argparse.Namespace) -> ShoeSimulator | ConsoleSimulator:
    if device == "console":
        return ConsoleSimulator(heartbeat_s=options.heartbeat)
    faults = ShoeFaults(
        misread=options.misread,
        drop=options.drop,
        garbage=options.garbage,
        bad_checksum=options.bad_checksum,
    )
    return ShoeSimulator(
        decks=options.decks,
        seed=options.seed,
        penetration=options.penetration,
        serial=options.serial,
        heartbeat_s=options.heartbeat,
        faults=faults,
    )


async def _serve(device: str, options: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with _make(device, options) as sim:
        say(await _start_serving(sim, device, options))
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        read_lines(loop, lines, device)
        if isinstance(sim, ShoeSimulator):
            act, help_text = shoe_commands(sim)
        else:
            act, help_text = console_commands(sim)
            # Answers and display lines go to stdout as the frames' bodies.
            sim.observers.append(lambda command: say(command.body()))
        tasks = [asyncio.create_task(obey(act, help_text, lines, stop), name=f"sim-{device}-stdin")]
        if isinstance(sim, ShoeSimulator) and options.auto_draw:
            tasks.append(
                asyncio.create_task(_auto_draw(sim, options.auto_draw), name="sim-shoe-auto-draw")
            )
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _start_serving(
    sim: ShoeSimulator | ConsoleSimulator, device: str, options: argparse.Namespace
) -> str:
    """Serve as the options say; the URL (or port) a driver opens."""
    if options.port is not None:
        try:
            endpoint = await serve_on_port(
                sim,
                options.port,
                baudrate=options.baud,
                bytesize=options.bytesize,
                parity=options.parity,
                stopbits=options.stopbits,
            )
        except LineSettingsError as exc:
            raise SystemExit(f"table-controller sim {device}: {exc}") from exc
        return endpoint.url or options.port
    if options.pty:
        return await sim.serve_pty()
    try:
        host, port = parse_listen(options.listen)
    except ValueError as exc:
        raise SystemExit(f"table-controller sim {device}: {exc}") from exc
    return await sim.serve_tcp(host, port)


async def _auto_draw(sim: ShoeSimulator, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        if sim.remaining == 0:
            sim.load()
        read = sim.draw()
        say(f"read {read.n} {read.card or 'COVER'} {read.frame.TAG}")
