"""``table-controller demo``: a whole Casino War table on this machine.

One command runs everything a table needs, over the real transports:

* an MQTT broker: ``--broker URL`` if given; else an embedded one, the
  ``mosquitto`` binary when it is installed, or amqtt (a Python broker, run in
  this process) when it is not (``--broker-impl`` chooses). amqtt speaks MQTT
  3.1.1 only, so the table is configured with ``protocol = "3.1.1"`` and the
  service logs the WARNING that docs/feed.md asks for;
* the three device simulators (shoe and console over ``socket://``, the sensor
  board over ``simusb://``), the production service (``table-controller run``'s
  code) with its journal in a temporary directory, and a simulated dealer and
  players (:mod:`table_controller.rigs.dealer`: random wagers and tie decisions,
  now and then a misread card or a past-post, resolved as a dealer would);
* the live pit view of the table (:func:`table_controller.pit.display.watch`).

By default it plays at a person's pace (a couple of seconds an action) until
stopped; ``--speed`` multiplies the pace and ``--rounds N`` stops after N
rounds. ``--headless`` shows no pit view: one line per round and a summary
(rounds, ties, wars, alerts, the players' net), from the published round
records; nobody watches it, so it plays 20 times faster unless ``--speed``
says otherwise.

Ctrl-C (SIGINT) or SIGTERM stops everything cleanly (the table publishes its
final status, offline), prints the summary of the rounds played and exits 0;
more of them while it stops change nothing (a Ctrl-C in the first moment,
while the command is still loading and nothing runs yet, exits 130). The exit
status is 1 when the table did not answer as the game requires or when a round
record (or the table's own ``stats``) disagrees with what the simulated dealer
dealt; 2 for bad options.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler

from table_controller.engine.rules import RulesName
from table_controller.feed.broker import BrokerConfigError, parse_broker_url
from table_controller.recorder.web.embedded import EmbeddedPit
from table_controller.rigs.broker import find_mosquitto
from table_controller.rigs.demo_broker import BrokerImpl, DemoBroker, watch_line
from table_controller.rigs.demo_play import (
    HEADLESS_SPEED,
    MAX_TABLES,
    SITE,
    TABLE_ID,
    DemoOptions,
    DemoResult,
    catch_signals,
    play_demo,
    release_signals,
)
from table_controller.rigs.demo_text import money, round_line, summary_line
from table_controller.rigs.errors import BrokerError, DemoError
from table_controller.rigs.people import Habits
from table_controller.rigs.tally import RoundPlayed

# What the demo's users (tests, the README's commands) find here.
__all__ = ["SITE", "TABLE_ID", "configure", "money", "run"]

log = logging.getLogger(__name__)

# ---------------------------------------------------------------- CLI


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not within 0..1")
    return value


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: the speed must be above 0")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"{text}: a port is 1..65535")
    return value


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least one round")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "A whole simulated table: an MQTT broker, the shoe, console and sensor "
        "simulators, the controller, a dealer and players, and the pit view. "
        "Ctrl-C stops everything."
    )
    parser.add_argument("--rounds", type=_rounds, metavar="N", help="stop after N rounds")
    parser.add_argument(
        "--headless",
        action="store_true",
        help="no pit view: one line per round and a summary",
    )
    parser.add_argument(
        "--speed",
        type=_speed,
        metavar="X",
        help=f"play X times faster than a person (default: 1 with the pit view, "
        f"{HEADLESS_SPEED:g} headless)",
    )
    parser.add_argument("--seed", type=int, help="repeat the same shoe and the same players")
    parser.add_argument(
        "--rules",
        choices=[r.value for r in RulesName],
        default=RulesName.NY.value,
        help="rules profile of the table (default: %(default)s)",
    )
    parser.add_argument(
        "--broker", metavar="URL", help="use this broker (mqtt://HOST[:PORT]) instead of one's own"
    )
    parser.add_argument(
        "--broker-port",
        type=_port,
        metavar="PORT",
        help="the embedded broker's port, so that others can watch it there (default: a free one)",
    )
    parser.add_argument(
        "--protocol",
        choices=["5", "3.1.1"],
        default="5",
        help="MQTT version of --broker (default: %(default)s)",
    )
    parser.add_argument(
        "--broker-impl",
        choices=[b.value for b in BrokerImpl],
        default=BrokerImpl.AUTO.value,
        help="the embedded broker: mosquitto when installed, else amqtt (default: %(default)s)",
    )
    defaults = Habits()
    parser.add_argument(
        "--misreads",
        type=_probability,
        default=defaults.misread,
        metavar="P",
        help="chance that the shoe misreads a dealt card (default: %(default)s)",
    )
    parser.add_argument(
        "--past-posts",
        type=_probability,
        default=defaults.past_post,
        metavar="P",
        help="chance per round that a player past-posts (default: %(default)s)",
    )
    parser.add_argument(
        "--json-summary", type=Path, metavar="FILE", help="also write the summary as JSON"
    )
    parser.add_argument(
        "--tables",
        type=_tables,
        default=None,
        metavar="N",
        help="tables on the floor (default 3 live, 1 headless); the summary is the first's",
    )
    parser.add_argument(
        "--web",
        metavar="HOST:PORT",
        help="serve the web pit display here (a recorder on SQLite beside the table); "
        "the live view serves it on a free loopback port unless --web off; headless "
        "with --web keeps serving after the last round until interrupted",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level (default: %(default)s)",
    )


def _options(args: argparse.Namespace) -> DemoOptions:
    if args.broker is not None and args.broker_impl != BrokerImpl.AUTO.value:
        raise ValueError("--broker-impl chooses an embedded broker: not with --broker")
    if args.broker is not None and args.broker_port is not None:
        raise ValueError("--broker-port is the embedded broker's: not with --broker")
    if args.broker is None and args.protocol != "5":
        raise ValueError("--protocol is for --broker; the embedded broker sets its own")
    if args.broker is not None:
        try:
            parse_broker_url(args.broker)
        except ValueError as exc:
            raise ValueError(f"--broker {args.broker!r}: expected mqtt://HOST[:PORT]") from exc
    return DemoOptions(
        rounds=args.rounds,
        headless=args.headless,
        speed=args.speed if args.speed is not None else HEADLESS_SPEED if args.headless else 1.0,
        seed=args.seed,
        rules=RulesName(args.rules),
        broker=args.broker,
        protocol=args.protocol,
        broker_impl=BrokerImpl(args.broker_impl),
        broker_port=args.broker_port,
        habits=Habits(misread=args.misreads, past_post=args.past_posts),
        json_summary=args.json_summary,
        web=_web(args.web, headless=args.headless, mqtt5=_mqtt5(args)),
        tables=args.tables if args.tables is not None else 1 if args.headless else 3,
    )


def _tables(text: str) -> int:
    n = int(text)
    if not 1 <= n <= MAX_TABLES:
        raise argparse.ArgumentTypeError(f"from 1 to {MAX_TABLES}")
    return n


def _mqtt5(args: argparse.Namespace) -> bool:
    """Whether the demo's broker will speak MQTT 5, which the recorder needs."""
    if args.broker is not None:
        return bool(args.protocol == "5")
    if args.broker_impl == BrokerImpl.AMQTT.value:
        return False
    return find_mosquitto() is not None


def _web(value: str | None, *, headless: bool, mqtt5: bool) -> str | None:
    if value is None:
        # The live view serves the web pit too, where the broker lets the recorder in.
        return None if headless or not mqtt5 else "127.0.0.1:0"
    if value == "off":
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--web {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8080, or off")
    return value


def _print_round(played: RoundPlayed) -> None:
    print(round_line(played), flush=True)


def _log_disagreements(played: RoundPlayed) -> None:
    for problem in played.disagreements:
        log.error("round %d: %s", played.round_id, problem)


async def _main(opts: DemoOptions, console: Console | None) -> DemoResult:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    catch_signals(loop, stop)

    def on_round(played: RoundPlayed) -> None:
        if opts.headless:
            _print_round(played)  # disagreements are listed at the end
        else:
            _log_disagreements(played)  # shown above the pit view as they happen

    def on_broker(broker: DemoBroker) -> None:
        # Headless too: a reader finds the demo's broker from outside (README).
        if console is not None:
            console.print(watch_line(broker, SITE), markup=False, highlight=False)
        else:
            print(watch_line(broker, SITE), flush=True)

    def on_web(pit: EmbeddedPit) -> None:
        login = f"user {pit.user}" + (f", password {pit.password}" if pit.password else "")
        line = f"web pit {pit.url}  ({login})"
        if console is not None:
            console.print(line, markup=False, highlight=False)
        else:
            print(line, flush=True)

    try:
        return await play_demo(
            opts, stop, console=console, on_round=on_round, on_broker=on_broker, on_web=on_web
        )
    finally:
        release_signals(loop)


@contextlib.contextmanager
def _logging(level: str, console: Console | None) -> Iterator[None]:
    """Log to the pit's console (above the live view) or to stderr, for this run only."""
    handler: logging.Handler
    if console is not None:
        handler = RichHandler(console=console, show_path=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    before = root.level
    # amqtt (and the state machine library under it) reports every client's connect
    # and disconnect, some as warnings: quiet unless debugging.
    quiet = [logging.getLogger(name) for name in ("amqtt", "transitions")]
    quiet_before = [logger.level for logger in quiet]
    root.addHandler(handler)
    root.setLevel(level)
    for logger in quiet:
        logger.setLevel(logging.DEBUG if level == "DEBUG" else logging.ERROR)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
        for logger, old in zip(quiet, quiet_before, strict=True):
            logger.setLevel(old)


def run(args: argparse.Namespace) -> int:
    try:
        opts = _options(args)
    except ValueError as exc:
        print(f"table-controller demo: {exc}", file=sys.stderr)
        return 2
    console = None if opts.headless else Console()
    with _logging(args.log_level, console):
        if console is not None:
            console.print(
                f"[bold]Casino War demo[/]: table {TABLE_ID} at {SITE}, {opts.rules.value} "
                f"rules, speed x{opts.speed:g}. Ctrl-C stops."
            )
        try:
            result = asyncio.run(_main(opts, console))
        except KeyboardInterrupt:
            # A Ctrl-C before the demo's signal handlers were in place or after they
            # were gone: nothing was left running.
            return 0
        except (DemoError, BrokerError, BrokerConfigError) as exc:
            print(f"table-controller demo: {exc}", file=sys.stderr)
            return 1
    head = "summary (stopped)" if result.interrupted else "summary"
    print(f"{head}: {summary_line(result.tally)}", flush=True)
    if opts.json_summary is not None:
        body = {
            **result.tally.to_json(),
            "interrupted": result.interrupted,
            "broker": result.broker,
            "rules": opts.rules.value,
            "seed": opts.seed,
            "problems": list(result.problems),
        }
        opts.json_summary.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    if result.problems:
        for problem in result.problems:
            print(f"table-controller demo: {problem}", file=sys.stderr)
        return 1
    return 0
