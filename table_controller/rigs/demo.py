"""``table-controller demo``: a whole Casino War table on this machine.

One command runs everything a table needs, over the real transports:

* an MQTT broker: ``--broker URL`` if given; else an embedded one, the
  ``mosquitto`` binary when it is installed, or amqtt (a Python broker, run in
  this process) when it is not (``--broker-impl`` chooses). amqtt speaks MQTT
  3.1.1 only, so the table is configured with ``protocol = "3.1.1"`` and the
  service logs the WARNING that MQTT.md asks for;
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
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, TypeVar

from rich.console import Console
from rich.logging import RichHandler

from table_controller.engine.rules import RulesName
from table_controller.pit.display import Link, PitModel, watch
from table_controller.rigs.broker import MosquittoBroker, find_mosquitto, free_port
from table_controller.rigs.dealer import Dealer, Habits, RoundPlayed, Tally
from table_controller.rigs.errors import BrokerError, DemoError
from table_controller.rigs.rig import TableRig, TableSpec
from table_controller.service.config import TableConfig
from table_controller.service.publisher import PublisherConfigError, parse_broker_url
from table_controller.service.service import TableService

log = logging.getLogger(__name__)

TABLE_ID: Final = "war-07"
SITE: Final = "demo"
# Table limits in cents (DEVICES.md); the simulated players bet within them.
LIMITS: Final = {"initial": (500, 100_000), "tie": (100, 10_000)}
STATS_SLACK_S: Final = 1.0
"""The table's stats published since the demo started count; older retained ones do not."""
CONNECT_TIMEOUT_S: Final = 5.0
PIT_FINAL_S: Final = 3.0
"""How long the pit view may take to show the table offline when the demo stops."""

HEADLESS_SPEED: Final = 20.0
"""Nobody watches a headless run at a person's pace: about a second a round."""

_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
T = TypeVar("T")


class BrokerImpl(StrEnum):
    """Which broker the demo embeds when no ``--broker`` is given."""

    AUTO = "auto"
    MOSQUITTO = "mosquitto"
    AMQTT = "amqtt"


@dataclass(frozen=True, slots=True)
class DemoBroker:
    url: str
    protocol: str
    """``"5"``, or ``"3.1.1"`` for a broker without MQTT 5 (amqtt)."""
    name: str


@contextlib.asynccontextmanager
async def _amqtt_broker() -> AsyncIterator[int]:
    """amqtt in this process on a free loopback port; yields the port."""
    from amqtt.broker import Broker  # only on this path: mosquitto needs none of it

    port = free_port()
    broker = Broker(
        {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
            # Only anonymous access on loopback: no $SYS topics and no packet logging.
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
    )
    await broker.start()
    try:
        yield port
    finally:
        await broker.shutdown()


async def _reachable(broker: DemoBroker) -> None:
    """A clear error, at once, when nothing listens at an external broker's address.

    Not for the embedded ones: amqtt takes a connection without MQTT as an error.
    """
    address = parse_broker_url(broker.url)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            _, writer = await asyncio.open_connection(address.host, address.port)
    except (OSError, TimeoutError) as exc:
        raise DemoError(f"{broker.name}: cannot connect ({exc or 'timed out'})") from exc
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


@contextlib.asynccontextmanager
async def demo_broker(
    url: str | None = None,
    impl: BrokerImpl = BrokerImpl.AUTO,
    protocol: str = "5",
) -> AsyncIterator[DemoBroker]:
    """The broker the demo uses: ``url`` when given, else an embedded one.

    ``BrokerImpl.AUTO`` embeds mosquitto when :func:`find_mosquitto` finds it,
    else amqtt. :class:`BrokerError` when mosquitto is asked for and missing.
    """
    if url is not None:
        external = DemoBroker(url, protocol, f"broker {url}")
        await _reachable(external)
        yield external
        return
    if impl is BrokerImpl.AUTO:
        impl = BrokerImpl.MOSQUITTO if find_mosquitto() else BrokerImpl.AMQTT
    if impl is BrokerImpl.MOSQUITTO:
        with MosquittoBroker() as broker:
            yield DemoBroker(broker.url, "5", f"embedded mosquitto at {broker.url}")
        return
    async with _amqtt_broker() as port:
        # MQTT.md: amqtt speaks 3.1.1 only.
        url = f"mqtt://127.0.0.1:{port}"
        yield DemoBroker(url, "3.1.1", f"embedded amqtt (MQTT 3.1.1) at {url}")


# ---------------------------------------------------------------- what is printed


def money(cents: int | None) -> str:
    """Signed dollars and cents (``+$25.00``, ``-$12.50``); ``--`` when unknown."""
    if cents is None:
        return "--"
    sign = "-" if cents < 0 else "+"
    whole, part = divmod(abs(cents), 100)
    return f"{sign}${whole}.{part:02d}"


def _position_text(p: Mapping[str, Any]) -> str:
    words = [f"P{p['position']}", p["card"] or "??", p["outcome"] or "?"]
    if p["decision"] is not None:
        words.append(p["decision"])
    if p["war_card"] is not None:
        words += [p["war_card"], p["war_outcome"] or "?"]
    words.append(money(p["net"]))
    return " ".join(words)


def round_line(played: RoundPlayed) -> str:
    """One round as the headless demo prints it:

    ``round 12  dealer 9H war 5D  P1 7H lose -$25.00 | P3 9D tie war KH win +$50.00
    net +$25.00  alerts MISREAD`` (``alerts -`` when none).
    """
    r = played.record
    dealer = f"dealer {r['dealer_card'] or '??'}"
    if r["dealer_war_card"] is not None:
        dealer += f" war {r['dealer_war_card']}"
    if r["void"]:
        hands = f"void ({r['void_reason']})"
    else:
        hands = " | ".join(_position_text(p) for p in r["positions"])
    alerts = ",".join(played.alert_codes) or "-"
    return f"round {r['round_id']:>4}  {dealer}  {hands}  net {money(r['net'])}  alerts {alerts}"


def _codes(counts: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{code} {n}" for code, n in counts)


def summary_line(tally: Tally) -> str:
    alerts = f"alerts {tally.alerts}"
    if tally.alerts_by_code:
        alerts += f" ({_codes(tally.alerts_by_code)})"
    return (
        f"rounds {tally.rounds}, ties {tally.ties}, wars {tally.wars}, "
        f"surrenders {tally.surrenders}, voids {tally.voids}, {alerts}, "
        f"players' net {money(tally.players_net)}"
    )


# ---------------------------------------------------------------- the demo


@dataclass(frozen=True, slots=True)
class DemoOptions:
    rounds: int | None = None
    headless: bool = False
    speed: float = 1.0
    seed: int | None = None
    rules: RulesName = RulesName.NY
    broker: str | None = None
    protocol: str = "5"
    broker_impl: BrokerImpl = BrokerImpl.AUTO
    habits: Habits = field(default_factory=Habits)
    json_summary: Path | None = None


@dataclass(frozen=True, slots=True)
class DemoResult:
    tally: Tally
    interrupted: bool
    problems: tuple[str, ...]
    broker: str


class _Offline:
    """Set when, after :meth:`arm`, a message shows the demo table offline in the pit."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self._messages = 0
        self._armed_at: int | None = None

    def arm(self) -> None:
        self._armed_at = self._messages

    def update(self, model: PitModel) -> None:
        self._messages = model.messages
        if self._armed_at is None or model.messages <= self._armed_at:
            return
        view = model.table(TABLE_ID, SITE)
        if view is not None and view.link is Link.OFFLINE:
            self.event.set()


def _catch_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    for sig in _SIGNALS:
        # Not on the main thread (or not on POSIX): the caller stops by other means.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)


def _release_signals(loop: asyncio.AbstractEventLoop) -> None:
    for sig in _SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(sig)


async def _until(stop: asyncio.Event, work: Coroutine[Any, Any, T]) -> tuple[bool, T | None]:
    """Run ``work`` until it ends, ``(True, result)``, or until ``stop``, ``(False, None)``."""
    task = asyncio.create_task(work, name="demo-dealer")
    stopper = asyncio.create_task(stop.wait(), name="demo-stop")
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (task, stopper):
            t.cancel()
        await asyncio.gather(task, stopper, return_exceptions=True)
    # The work's own error (a DemoError) is raised here.
    return (False, None) if task.cancelled() else (True, task.result())


class _Controller:
    """The production service in this process (``table-controller run``'s code).

    Run without :func:`~table_controller.service.service.serve`'s own signal handlers: the
    demo handles SIGINT/SIGTERM for everything, from start to end, so a second
    Ctrl-C while stopping is no different from the first. A service that ends by
    itself (a failure) sets ``stop``, so the demo ends with its error.
    """

    def __init__(self, cfg: TableConfig, stop: asyncio.Event) -> None:
        self.service = TableService(cfg)
        self._stop = stop
        self._service_stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self.service.run(self._service_stop), name="table-service")
        self._task.add_done_callback(lambda _: self._stop.set())
        # Let it begin: a task cancelled before its first step never runs its cleanup,
        # and the service's journal must close.
        await asyncio.sleep(0)

    async def stop(self) -> None:
        """Stop the service: it publishes its final status (``online: false``) and ends."""
        task, self._task = self._task, None
        if task is None:
            return
        self._service_stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class _Pit:
    """The pit view of the demo table on ``console``, until :meth:`stop`."""

    def __init__(self, broker: DemoBroker, console: Console) -> None:
        self._stop = asyncio.Event()
        self._offline = _Offline()
        self._task = asyncio.create_task(
            watch(
                broker.url,
                SITE,
                console=console,
                stop=self._stop,
                protocol=broker.protocol,
                model=PitModel(site=SITE),
                on_update=self._offline.update,
            ),
            name="demo-pit",
        )

    def expect_offline(self) -> None:
        """The table is about to stop: its final status (offline, MQTT.md) comes next."""
        self._offline.arm()

    async def stop(self, *, await_offline: bool) -> None:
        """Stop, once the view shows the table offline when ``await_offline``."""
        if await_offline:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(PIT_FINAL_S):
                    await self._offline.event.wait()
        self._stop.set()
        await self._task


async def play_demo(
    opts: DemoOptions,
    stop: asyncio.Event,
    *,
    console: Console | None = None,
    on_round: Callable[[RoundPlayed], None] | None = None,
) -> DemoResult:
    """Run the demo until ``opts.rounds`` are played or ``stop`` is set.

    With ``console`` the pit view is shown on it. A :class:`DemoError` when the
    table stops answering.
    """
    since = datetime.now(UTC) - timedelta(seconds=STATS_SLACK_S)
    with tempfile.TemporaryDirectory(prefix="table-controller-demo-") as tmp:
        async with demo_broker(opts.broker, opts.broker_impl, opts.protocol) as broker:
            spec = TableSpec(
                table_id=TABLE_ID,
                site=SITE,
                rules=opts.rules.value,
                seed=opts.seed,
                protocol=broker.protocol,
                limits=LIMITS,
            )
            async with contextlib.AsyncExitStack() as stack:
                try:
                    rig = await stack.enter_async_context(TableRig(broker.url, Path(tmp), spec))
                except TimeoutError as exc:
                    raise DemoError(f"{broker.name}: no answer to a subscription") from exc
                assert rig.config is not None
                controller = _Controller(rig.config, stop)
                await controller.start()
                pit = _Pit(broker, console) if console is not None else None
                try:
                    dealer = Dealer(
                        rig, seed=opts.seed, speed=opts.speed, habits=opts.habits, on_round=on_round
                    )
                    finished, _ = await _until(stop, dealer.play(opts.rounds))
                    if finished:
                        problems = dealer.tally.disagreements
                        problems += await dealer.check_stats(since)
                    else:
                        # A round may have ended as the stop came: it counts too.
                        dealer.take_unchecked()
                        problems = dealer.tally.disagreements
                finally:
                    if pit is not None:
                        pit.expect_offline()
                    await controller.stop()
                    if pit is not None:
                        # The last view shows the table's final status.
                        await pit.stop(await_offline=controller.service.ready.is_set())
    return DemoResult(dealer.tally, not finished, problems, broker.name)


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
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level (default: %(default)s)",
    )


def _options(args: argparse.Namespace) -> DemoOptions:
    if args.broker is not None and args.broker_impl != BrokerImpl.AUTO.value:
        raise ValueError("--broker-impl chooses an embedded broker: not with --broker")
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
        habits=Habits(misread=args.misreads, past_post=args.past_posts),
        json_summary=args.json_summary,
    )


def _print_round(played: RoundPlayed) -> None:
    print(round_line(played), flush=True)


def _log_disagreements(played: RoundPlayed) -> None:
    for problem in played.disagreements:
        log.error("round %d: %s", played.round_id, problem)


async def _main(opts: DemoOptions, console: Console | None) -> DemoResult:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    _catch_signals(loop, stop)

    def on_round(played: RoundPlayed) -> None:
        if opts.headless:
            _print_round(played)  # disagreements are listed at the end
        else:
            _log_disagreements(played)  # shown above the pit view as they happen

    try:
        return await play_demo(opts, stop, console=console, on_round=on_round)
    finally:
        _release_signals(loop)


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
        except (DemoError, BrokerError, PublisherConfigError) as exc:
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
