"""Scenarios on a whole table of the runner's own, on loopback.

The runner starts the simulators, the production controller (in this process,
or as a ``table-controller run`` child process when a step kills it) and,
unless given one, a Mosquitto broker; it can take the broker away through a
:class:`~table_controller.rigs.broker.BrokerGate`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import tempfile
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import aiomqtt

from drivers.lineframe.cards import Card
from simulators.console import ConsoleSimulator
from simulators.sensors import SimulatedBoard
from table_controller.feed.broker import parse_broker_url
from table_controller.feed.payloads import TOPIC_RULES
from table_controller.rigs.broker import BrokerGate, MosquittoBroker, free_port
from table_controller.rigs.observer import Observer
from table_controller.rigs.rig import TableRig, TableSpec
from table_controller.rigs.scenario.fields import COVER
from table_controller.rigs.scenario.loading import LoadedScenario
from table_controller.rigs.scenario.model import DEFAULT_TIMEOUT_S, SITE, Scenario
from table_controller.rigs.scenario.results import ScenarioResult, Status, StepFailed, StepResult
from table_controller.rigs.scenario.runner import Runner
from table_controller.rigs.scenario.steps import Device
from table_controller.rigs.scenario.table import RigShoe

log = logging.getLogger(__name__)

STOP_WAIT_S: Final = 10.0


class LocalTable:
    """A :class:`TableRig` as a :class:`~table_controller.rigs.scenario.table.ScenarioTable`."""

    def __init__(self, rig: TableRig, gate: BrokerGate | None, *, process: bool) -> None:
        self.rig = rig
        self.gate = gate
        self.process = process

    @property
    def shoe(self) -> RigShoe:
        assert isinstance(self.rig.shoe, RigShoe)
        return self.rig.shoe

    @property
    def console(self) -> ConsoleSimulator:
        return self.rig.console

    @property
    def board(self) -> SimulatedBoard:
        return self.rig.board

    @property
    def rfid(self) -> bool:
        return self.rig.spec.rfid

    @property
    def observer(self) -> Observer:
        assert self.rig.observer is not None
        return self.rig.observer

    async def start_controller(self) -> None:
        if self.process:
            self.rig.start_controller_process()
        else:
            await self.rig.start_controller()

    async def stop_controller(self, sig: int = signal.SIGTERM) -> None:
        if self.process:
            await asyncio.to_thread(self.rig.kill_controller_process, sig)
        else:
            await self.rig.stop_controller()

    def _port(self, device: str) -> int:
        assert self.rig.config is not None
        devices = self.rig.config.devices
        url = devices.shoe if device == "shoe" else devices.console
        return int(url.rsplit(":", 1)[1])

    async def unplug(self, device: Device) -> None:
        if device == "shoe":
            await self.shoe.stop_serving()
        elif device == "console":
            await self.console.stop_serving()
        else:
            await self.board.unplug()

    async def replug(self, device: Device) -> None:
        if device == "shoe":
            await self.shoe.serve_tcp(port=self._port("shoe"))
        elif device == "console":
            await self.console.serve_tcp(port=self._port("console"))
        else:
            await self.board.replug()

    async def restart_controller(self) -> str | None:
        await self.stop_controller()
        await self.start_controller()
        return None

    async def kill_controller(self) -> str | None:
        if not self.process:
            return "the controller runs in the rig's process: it cannot be killed alone"
        await self.stop_controller(signal.SIGKILL)
        await self.start_controller()
        return None

    async def broker(self, up: bool) -> str | None:
        assert self.gate is not None  # run_scenario puts one in front of the broker
        await (self.gate.open() if up else self.gate.close())
        return None


def _table_id(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-_.")[:40] or "scenario"
    return f"{slug}-{uuid.uuid4().hex[:6]}"


def shoe_cards(scenario: Scenario) -> tuple[list[Card] | None, int | None]:
    """The shoe's physical cards and where the cover card lies (None: a seeded shuffle)."""
    if scenario.shoe is None:
        return None, None
    cards = [Card.parse(c) for c in scenario.shoe if c != COVER]
    cover_after = scenario.shoe.index(COVER) if COVER in scenario.shoe else len(cards)
    return cards, cover_after


def _table_spec(loaded: LoadedScenario, table_id: str) -> TableSpec:
    sc = loaded.scenario
    t = sc.table
    cards, cover_after = shoe_cards(sc)
    return TableSpec(
        table_id=table_id,
        site=SITE,
        rules=t.rules.value,
        decks=t.deck_count,
        positions=t.positions,
        rfid=t.rfid,
        seed=t.seed,
        cards=cards,
        cover_after=cover_after,
        limits={str(k): v for k, v in t.limits.items()},
        profile=dict(t.profile),
    )


def _own_broker(scenario: Scenario, prefix: str, workdir: Path) -> MosquittoBroker:
    port = free_port()
    lines = [
        f"listener {port} 127.0.0.1",
        "allow_anonymous true",
        "persistence false",
        "max_queued_messages 100000",
        "set_tcp_nodelay true",
    ]
    if scenario.broker.deny:
        # Rules before any `user` line apply to clients without a username, as the
        # rig's are; mosquitto 2.0 lets a `deny` win over the grant of `#`.
        # Started as root, mosquitto reads the ACL after dropping to its own user:
        # the folder must let it through and the file be readable (nothing secret).
        workdir.chmod(0o711)
        acl = workdir / "broker.acl"
        acl.write_text(
            "topic readwrite #\n"
            + "".join(f"topic deny {prefix}/{topic}\n" for topic in scenario.broker.deny),
            encoding="utf-8",
        )
        acl.chmod(0o644)
        lines.append(f"acl_file {acl}")
    return MosquittoBroker(port, config_text="\n".join(lines) + "\n")


async def _clear_retained(url: str, prefix: str) -> None:
    """Leave no retained status/state/stats of the scenario's table on a shared broker."""
    address = parse_broker_url(url)
    with contextlib.suppress(aiomqtt.MqttError, OSError, TimeoutError):
        async with (
            asyncio.timeout(DEFAULT_TIMEOUT_S),
            aiomqtt.Client(
                address.host, address.port, protocol=aiomqtt.ProtocolVersion.V5
            ) as client,
        ):
            for topic in (t for t, rule in TOPIC_RULES.items() if rule.retained):
                await client.publish(f"{prefix}/{topic}", b"", qos=1, retain=True)


async def play(runner: Runner) -> None:
    """Wait for the table to be ready, then play; a table that never gets ready is an
    error of the scenario's start."""
    try:
        await runner.ready()
    except StepFailed as exc:
        runner.results.append(StepResult(0, None, "start the table", Status.ERROR, str(exc)))
        return
    try:
        await runner.play()
    finally:
        await runner.close()


def rig_failed(exc: Exception, where: str) -> StepResult:
    """The rig itself failed: reported with the scenario."""
    if isinstance(exc, TimeoutError) and not str(exc):
        exc = TimeoutError(f"no answer in time from the broker at {where}")
    return StepResult(0, None, "run the rig", Status.ERROR, f"{type(exc).__name__}: {exc}")


async def run_scenario(loaded: LoadedScenario, *, broker_url: str | None = None) -> ScenarioResult:
    """Play one scenario against a controller; ``broker_url`` None: a broker of its own.

    A scenario that stops the broker or needs access rules always gets one of its own.
    """
    loop = asyncio.get_running_loop()
    since = loop.time()
    started = datetime.now(UTC)
    scenario = loaded.scenario
    results: list[StepResult] = []
    runner: Runner | None = None
    own: MosquittoBroker | None = None
    gate: BrokerGate | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="scenario-") as tmp:
            workdir = Path(tmp)
            spec = _table_spec(loaded, _table_id(loaded.name))
            prefix = f"casino/{spec.site}/table/{spec.table_id}"
            if broker_url is None or scenario.needs_own_broker:
                own = _own_broker(scenario, prefix, workdir)
                own.start()
            url = own.url if own is not None else broker_url
            assert url is not None
            if scenario.cuts_broker:
                gate = BrokerGate(url)
                await gate.open()
            rig = TableRig(gate.url if gate is not None else url, workdir, spec)
            # The rig's shoe, as the simulator plus lost reads (``lose``).
            rig.shoe = RigShoe(
                decks=spec.decks, seed=spec.seed, cards=spec.cards, cover_after=spec.cover_after
            )
            table = LocalTable(rig, gate, process=scenario.kills_controller)
            try:
                async with rig:
                    if gate is not None:
                        # The controller goes through the gate, the observer straight
                        # to the broker: it sees what comes when the broker is back.
                        await table.observer.close()
                        rig.observer = Observer(url, f"{rig.prefix}/#")
                        await rig.observer.start()
                    runner = Runner(loaded, table)
                    await table.start_controller()
                    try:
                        await play(runner)
                    finally:
                        await table.stop_controller()
            finally:
                if runner is not None:
                    results.extend(runner.results)
            if own is None:
                await _clear_retained(url, prefix)
    except Exception as exc:  # the rig itself failed: report it with the scenario
        log.exception("scenario %s could not run", loaded.name)
        results.append(rig_failed(exc, broker_url or "localhost"))
    finally:
        if gate is not None:
            await gate.close()
        if own is not None:
            own.close()
    timings = tuple(runner.timings) if runner is not None else ()
    seconds = round(loop.time() - since, 3)
    return ScenarioResult(loaded.name, loaded.path, started, seconds, tuple(results), timings)


async def run_scenarios(
    scenarios: Sequence[LoadedScenario],
    *,
    broker_url: str | None = None,
    progress: Callable[[ScenarioResult], None] | None = None,
) -> list[ScenarioResult]:
    """Play scenarios one after another on one broker (``broker_url``, or one started
    here); those that need a broker of their own get one."""
    shared: MosquittoBroker | None = None
    if broker_url is None and any(not s.scenario.needs_own_broker for s in scenarios):
        shared = MosquittoBroker()
        shared.start()
        broker_url = shared.url
    results: list[ScenarioResult] = []
    try:
        for loaded in scenarios:
            result = await run_scenario(loaded, broker_url=broker_url)
            results.append(result)
            if progress is not None:
                progress(result)
    finally:
        if shared is not None:
            shared.close()
    return results
