"""Playing the demo: a table, its dealer and players, and the pit view, until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TypeVar

from rich.console import Console

from table_controller.engine.rules import RulesName
from table_controller.pit.display import Link, PitModel, watch
from table_controller.recorder.web.embedded import EmbeddedPit, embedded_pit
from table_controller.rigs.dealer import Dealer
from table_controller.rigs.demo_broker import BrokerImpl, DemoBroker, demo_broker
from table_controller.rigs.errors import DemoError
from table_controller.rigs.observer import Observer
from table_controller.rigs.people import Habits
from table_controller.rigs.rig import TableRig, TableSpec
from table_controller.rigs.tally import RoundPlayed, Tally
from table_controller.service.config import TableConfig
from table_controller.service.service import TableService

TABLE_ID: Final = "war-07"
SITE: Final = "demo"
# Table limits in cents (docs/devices.md); the simulated players bet within them.
LIMITS: Final = {"initial": (500, 100_000), "tie": (100, 10_000)}
STATS_SLACK_S: Final = 1.0
"""The table's stats published since the demo started count; older retained ones do not."""
PIT_FINAL_S: Final = 3.0
"""How long the pit view may take to show the table offline when the demo stops."""

HEADLESS_SPEED: Final = 20.0
# Tables a demo may put on its floor.
MAX_TABLES: Final = 12
"""Nobody watches a headless run at a person's pace: about a second a round."""

_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
T = TypeVar("T")


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
    broker_port: int | None = None
    """The embedded broker's port (None: a free one)."""
    habits: Habits = field(default_factory=Habits)
    json_summary: Path | None = None
    web: str | None = None
    tables: int = 1
    """Tables on the floor: the first is the one summarised, the others deal beside it."""
    """Where to serve the web pit display (HOST:PORT), with a recorder beside the table."""


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


def raised_codes(observer: Observer | None) -> list[str]:
    """The code of every alert raised (not its resolution) that ``observer`` saw."""
    if observer is None:
        return []
    raised = {a["alert"]: a["code"] for a in observer.of("alerts") if a["resolved_by"] is None}
    return list(raised.values())


def catch_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    for sig in _SIGNALS:
        # Not on the main thread (or not on POSIX): the caller stops by other means.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)


def release_signals(loop: asyncio.AbstractEventLoop) -> None:
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
        """The table is about to stop: its final status (offline, docs/feed.md) comes next."""
        self._offline.arm()

    async def stop(self, *, await_offline: bool) -> None:
        """Stop, once the view shows the table offline when ``await_offline``."""
        if await_offline:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(PIT_FINAL_S):
                    await self._offline.event.wait()
        self._stop.set()
        await self._task


def _web_pit(
    broker: DemoBroker, workdir: Path, listen: str
) -> AbstractAsyncContextManager[EmbeddedPit]:
    if broker.protocol != "5":
        # The recorder needs MQTT 5 shared subscriptions; amqtt speaks 3.1.1 only.
        raise DemoError(
            f"the web pit needs an MQTT 5 broker and {broker.name} speaks {broker.protocol}: "
            "install mosquitto, or run the demo with --web off"
        )
    return embedded_pit(broker.url, [SITE], workdir, listen=listen)


def table_id(i: int) -> str:
    """The demo's table ids: war-07, war-08, …"""
    return f"war-{7 + i:02d}"


@contextlib.asynccontextmanager
async def _beside(
    broker: DemoBroker, workdir: Path, spec: TableSpec, opts: DemoOptions
) -> AsyncIterator[None]:
    """Another table dealing on the same floor, until the demo ends (not summarised)."""
    await asyncio.to_thread(workdir.mkdir)
    stop = asyncio.Event()
    async with TableRig(broker.url, workdir, spec) as rig:
        assert rig.config is not None
        controller = _Controller(rig.config, stop)
        await controller.start()
        seed = None if opts.seed is None else opts.seed + int(spec.table_id[-2:])
        dealer = Dealer(rig, seed=seed, speed=opts.speed, habits=opts.habits)
        task = asyncio.create_task(dealer.play(None), name=f"dealer-{spec.table_id}")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, DemoError, TimeoutError):
                await task
            await controller.stop()


async def play_demo(
    opts: DemoOptions,
    stop: asyncio.Event,
    *,
    console: Console | None = None,
    on_round: Callable[[RoundPlayed], None] | None = None,
    on_broker: Callable[[DemoBroker], None] | None = None,
    on_web: Callable[[EmbeddedPit], None] | None = None,
) -> DemoResult:
    """Run the demo until ``opts.rounds`` are played or ``stop`` is set.

    With ``console`` the pit view is shown on it; ``on_broker`` is told the broker as
    soon as it is there. A :class:`DemoError` when the table stops answering.
    """
    since = datetime.now(UTC) - timedelta(seconds=STATS_SLACK_S)
    with tempfile.TemporaryDirectory(prefix="table-controller-demo-") as tmp:
        async with demo_broker(
            opts.broker, opts.broker_impl, opts.protocol, port=opts.broker_port
        ) as broker:
            if on_broker is not None:
                on_broker(broker)
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
                if opts.web is not None:
                    web = await stack.enter_async_context(_web_pit(broker, Path(tmp), opts.web))
                    if on_web is not None:
                        on_web(web)
                assert rig.config is not None
                dealer = Dealer(
                    rig, seed=opts.seed, speed=opts.speed, habits=opts.habits, on_round=on_round
                )
                controller = _Controller(rig.config, stop)
                await controller.start()
                for i in range(1, opts.tables):
                    await stack.enter_async_context(
                        _beside(
                            broker, Path(tmp) / f"t{i}", replace(spec, table_id=table_id(i)), opts
                        )
                    )
                pit = _Pit(broker, console) if console is not None else None
                statuses_before_stop = 0
                stats_problems: tuple[str, ...] = ()
                try:
                    finished, _ = await _until(stop, dealer.play(opts.rounds))
                    if finished:
                        stats_problems = await dealer.check_stats(since)
                    if finished and opts.web is not None and opts.rounds is not None:
                        # The rounds are played; the web display stays for a look.
                        await stop.wait()
                finally:
                    if pit is not None:
                        pit.expect_offline()
                    if rig.observer is not None:
                        statuses_before_stop = len(rig.observer.of("status"))
                    await controller.stop()
                    if pit is not None:
                        # The last view shows the table's final status.
                        await pit.stop(await_offline=controller.service.ready.is_set())
                if not finished:
                    # A round may have ended as the stop came: it counts too, once all the
                    # table published before its final status has come in.
                    await _final_status_seen(rig.observer, statuses_before_stop)
                    dealer.take_unchecked()
                # The alerts as the table raised them, as the pit counts them: those of a
                # round the stop cut short count too.
                dealer.tally = dealer.tally.with_alerts(raised_codes(rig.observer))
    return DemoResult(
        dealer.tally, not finished, dealer.tally.disagreements + stats_problems, broker.name
    )


async def _final_status_seen(observer: Observer | None, before: int) -> None:
    """Until ``observer`` has the final status of a table told to stop (``online:
    false``, after the first ``before`` statuses, so not an earlier last will), which
    comes after every round record and alert it journaled; PIT_FINAL_S at most."""
    if observer is None:
        return

    def offline(obs: Observer) -> bool:
        return any(s["online"] is False for s in obs.of("status")[before:])

    with contextlib.suppress(TimeoutError):
        await observer.wait(offline, PIT_FINAL_S)
