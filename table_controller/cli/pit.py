"""``table-controller pit --broker URL``: the live pit display of every table of a site."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from rich.console import Console

from table_controller.feed.topics import DEFAULT_PREFIX
from table_controller.pit.client import ONCE_SETTLE_S, MqttVersion, watch
from table_controller.pit.errors import PitConfigError, PitConnectError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--broker", required=True, metavar="URL", help="mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"
    )
    parser.add_argument("--site", help="show only this site's tables (default: every site)")
    parser.add_argument(
        "--prefix",
        default=DEFAULT_PREFIX,
        metavar="PATTERN",
        help="topic prefix of a table, with {site} and {table} (default: %(default)s)",
    )
    parser.add_argument("--username", help="MQTT user name of this pit display")
    parser.add_argument("--password-file", type=Path, metavar="FILE", help="MQTT password file")
    parser.add_argument("--ca-file", type=Path, metavar="FILE", help="CA certificate (mqtts://)")
    parser.add_argument(
        "--protocol",
        choices=[p.value for p in MqttVersion],
        default=MqttVersion.V5.value,
        help="MQTT version (default: %(default)s; 3.1.1 for a broker without MQTT 5)",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help=f"print one snapshot after the retained messages (~{ONCE_SETTLE_S:.0f} s), then exit",
    )


def _console_for(once: bool) -> Console:
    console = Console()
    if once and not console.is_terminal and "COLUMNS" not in os.environ:
        # A snapshot piped to a file or a script is read whole: do not squeeze it to 80.
        return Console(width=160)
    return console


async def _main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        await watch(
            args.broker,
            args.site,
            console=_console_for(args.once),
            stop=stop,
            prefix=args.prefix,
            username=args.username,
            password_file=args.password_file,
            ca_file=args.ca_file,
            protocol=args.protocol,
            once=args.once,
        )
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


def run(args: argparse.Namespace) -> int:
    try:
        asyncio.run(_main(args))
    except PitConfigError as exc:
        print(f"table-controller pit: {exc}", file=sys.stderr)
        return 2
    except PitConnectError as exc:
        print(f"table-controller pit: {exc}", file=sys.stderr)
        return 1
    return 0
