"""Scenarios on a table under test: ``scenario run --external rig.toml FILES…``.

No controller and no broker are started. The rig plays the shoe and the
console on the serial lines ``rig.toml`` names and serves the sensor board at
its ``sensors`` address; it observes the table on the table's own broker, and
takes the rules, decks and positions from the table's retained ``status``.

Every scenario of a run plays on the same controller, one after another, so
the rig keeps one set of devices (the shoe's read counter and the console's
press numbers go on) and, before each scenario, brings the table back to what
a fresh table is: every device online, an empty layout, no round in progress
(``VOID_ROUND``), nothing left to ``CONFIRM``, a rig's own dealer signed in
(so that the scenario's ``DEALER`` is a new dealer) and the shuffle due (the
cover card drawn). A scenario's ``round_id`` counts from its first round.

What an external run cannot do is skipped, never passed: a scenario that needs
a broker of its own or takes the broker away, or whose table differs from the
table under test; a ``restart`` or ``kill`` of the controller without a
``restart_command`` or ``kill_command``.
"""

from __future__ import annotations

import asyncio
import random
import shlex
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from drivers.console.frames import NakFrame
from drivers.shoe.frames import HelloFrame
from simulators.console import ConsoleSimulator
from simulators.port import PortEndpoint
from simulators.sensors import SimulatedBoard
from simulators.serve import SimulatedLineDevice, serve_on_port
from simulators.shoe import build_shoe
from table_controller.rigs.errors import RigUnavailable, TableMisbehaved
from table_controller.rigs.observer import WAIT_S as OBSERVER_WAIT_S
from table_controller.rigs.observer import Observer
from table_controller.rigs.scenario.loading import LoadedScenario
from table_controller.rigs.scenario.local import play, rig_failed, shoe_cards
from table_controller.rigs.scenario.model import Scenario
from table_controller.rigs.scenario.results import ScenarioResult, Status, StepResult
from table_controller.rigs.scenario.rigfile import RigSection
from table_controller.rigs.scenario.runner import ONLINE_TIMEOUT_S, Runner
from table_controller.rigs.scenario.steps import Device
from table_controller.rigs.scenario.summary import ExternalRun
from table_controller.rigs.scenario.table import RigShoe

RIG_DEALER: Final = "RIG"
"""The dealer the rig signs in between scenarios, so that a scenario's dealer is new."""
COMMAND_TIMEOUT_S: Final = 60.0
BOARD_BITS: Final = 30
MAX_CONFIRMS: Final = 8


class _HelloShoe(RigShoe):
    """The rig's shoe, which keeps the last ``HELLO`` it sent (for the run's summary)."""

    hello: HelloFrame | None = None

    def send_frame(self, frame: Any) -> bool:
        if isinstance(frame, HelloFrame):
            self.hello = frame
        return super().send_frame(frame)


class ExternalTable:
    """The rig's devices on a bench's lines, and the table under test on its broker."""

    def __init__(self, rig: RigSection) -> None:
        self.rig = rig
        self._shoe = _HelloShoe(cover_after=0)
        self._console = ConsoleSimulator()
        self._board = SimulatedBoard(host=rig.sensors_host, port=rig.sensors_port)
        self._lines: dict[str, SimulatedLineDevice[Any]] = {
            "shoe": self._shoe,
            "console": self._console,
        }
        self._ports: dict[str, PortEndpoint] = {}
        self._pulled: set[str] = set()
        self._login = rig.login()
        self.session = Observer(rig.broker, f"{rig.prefix}/#", login=self._login)
        """Every message of the run (the summary's, and the waits between scenarios)."""
        self._observer: Observer | None = None

    @property
    def shoe(self) -> _HelloShoe:
        return self._shoe

    @property
    def console(self) -> ConsoleSimulator:
        return self._console

    @property
    def board(self) -> SimulatedBoard:
        return self._board

    @property
    def rfid(self) -> bool:
        return self._board.rfid

    @property
    def observer(self) -> Observer:
        assert self._observer is not None, "no scenario is playing"
        return self._observer

    @property
    def scale(self) -> float:
        return self.rig.timeout_scale

    async def __aenter__(self) -> ExternalTable:
        try:
            await self.session.start(OBSERVER_WAIT_S * self.scale)
            await self._board.start()
            for name, device in self._lines.items():
                url = getattr(self.rig, name)
                try:
                    self._ports[name] = await serve_on_port(device, url)
                except ValueError as exc:
                    raise RigUnavailable(f"the {name} line {url}: {exc}") from exc
                await self._wait_port(name)
        except BaseException:
            await self._close()  # what did open: the board's port, a line, the session
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.end_scenario()
        await self._close()

    async def _close(self) -> None:
        for device in self._lines.values():
            await device.close()
        await self._board.close()
        await self.session.close()

    async def _wait_port(self, name: str) -> None:
        try:
            async with asyncio.timeout(ONLINE_TIMEOUT_S * self.scale):
                await self._ports[name].wait_open()
        except TimeoutError:
            url = getattr(self.rig, name)
            raise RigUnavailable(f"the {name} line {url} did not open") from None

    # -- ScenarioTable -----------------------------------------------------------------

    async def unplug(self, device: Device) -> None:
        """The rig's end of the line closed: the table hears nothing more."""
        if device == "sensors":
            await self._board.unplug()
        else:
            await self._lines[device].stop_serving()
            self._pulled.add(device)

    async def replug(self, device: Device) -> None:
        if device == "sensors":
            await self._board.replug()
        else:
            await self._lines[device].replug()
            self._pulled.discard(device)
            await self._wait_port(device)

    async def restart_controller(self) -> str | None:
        return await self._command(self.rig.restart_command, "restart_command")

    async def kill_controller(self) -> str | None:
        return await self._command(self.rig.kill_command, "kill_command")

    async def broker(self, up: bool) -> str | None:
        return "the table's broker is not the rig's to take away"

    async def _command(self, command: str | None, key: str) -> str | None:
        if command is None:
            return f"rig.toml names no {key}"
        proc = await asyncio.create_subprocess_exec(
            *shlex.split(command),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            async with asyncio.timeout(COMMAND_TIMEOUT_S * self.scale):
                out, _ = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise TableMisbehaved(f"{key} did not finish: {command}") from None
        if proc.returncode != 0:
            text = out.decode(errors="replace").strip()[-300:]
            raise TableMisbehaved(f"{key} exited {proc.returncode}: {command}: {text}")
        return None

    # -- between scenarios -------------------------------------------------------------

    def cannot_run(self, scenario: Scenario) -> str | None:
        """Why ``scenario`` cannot run on the table under test, or None."""
        if scenario.needs_own_broker or scenario.cuts_broker:
            return "it needs control of the broker, which the table under test does not give"
        status = self.session.last("status")
        assert status is not None
        table = scenario.table
        given = table.model_fields_set
        if table.rules.value != status["rules"]:
            return f"it needs {table.rules.value} rules; the table plays {status['rules']}"
        if "decks" in given and table.decks != status["decks"]:
            return f"it needs {table.decks} decks; the table deals from {status['decks']}"
        if "positions" in given and table.positions != status["positions"]:
            return f"it needs {table.positions} positions; the table has {status['positions']}"
        return None

    async def _wait(self, what: str, check: Callable[[Observer], bool]) -> None:
        timeout = ONLINE_TIMEOUT_S * self.scale
        try:
            await self.session.wait(check, timeout)
        except TimeoutError as exc:
            raise TableMisbehaved(f"waited {timeout:g} s for {what}: {exc}") from None

    async def wait_online(self) -> dict[str, Any]:
        def online(obs: Observer) -> bool:
            s = obs.last("status")
            return bool(
                s and s["online"] and all(d["state"] == "ok" for d in s["devices"].values())
            )

        await self._wait("the table online with every device ok", online)
        status = self.session.last("status")
        assert status is not None
        return status

    def _state(self) -> dict[str, Any] | None:
        return self.session.last("state")

    async def _press(self, action: str, arg: str | None = None) -> bool:
        k = self._console.press(action, arg)
        try:
            async with asyncio.timeout(ONLINE_TIMEOUT_S * self.scale):
                answer = await self._console.answer(k)
        except TimeoutError:
            raise TableMisbehaved(f"press {action} got no answer") from None
        return not isinstance(answer, NakFrame)

    async def prepare(self, scenario: Scenario) -> None:
        """Bring the table back to a fresh table's start, then load the scenario's shoe."""
        for name in list(self._pulled):
            await self.replug(name)  # type: ignore[arg-type]
        self._shoe.resume()
        self._console.resume()
        self._board.mute(False)
        if self._board.rfid != scenario.table.rfid:
            # Another board on the same port: the table meets it as a board plugged in.
            if self._board.plugged:
                await self._board.unplug()
            self._board.layout.rfid = scenario.table.rfid
        if not self._board.plugged:
            await self._board.replug()
        for bit in range(BOARD_BITS):
            if self._board.fault & (1 << bit):
                self._board.set_fault(bit, False)
        self._board.clear()
        await self.wait_online()
        await self._wait("an empty layout", _empty_layout)
        state = self._state()
        if state is not None:
            # A round in progress, or cards or alerts in the round being bet on, go with
            # a void round (NAK NOT_NOW when there is nothing to void).
            await self._press("VOID_ROUND")
            for _ in range(MAX_CONFIRMS):
                if not await self._press("CONFIRM"):
                    break
            if state["dealer"] != RIG_DEALER:
                await self._press("DEALER", RIG_DEALER)
            if self._state_phase() != "shuffle_due":
                self._shoe.load([], cover_after=0)
                self._shoe.draw()  # the cover card: the shuffle is due (§(h)(4))
            await self._wait("the shuffle due, nothing held", _fresh)
            voided = self._state()
            if await self._press("VOID_ROUND"):
                assert voided is not None
                await self._wait("the void round", _after_round(int(voided["round_id"])))
        self._load_shoe(scenario)

    def _state_phase(self) -> str | None:
        state = self._state()
        return None if state is None else str(state["phase"])

    def _load_shoe(self, scenario: Scenario) -> None:
        status = self.session.last("status")
        assert status is not None
        self._shoe.decks = int(status["decks"])
        self._shoe.lost_reads.clear()
        cards, cover_after = shoe_cards(scenario)
        if cards is None:
            cards = build_shoe(self._shoe.decks, random.Random(scenario.table.seed))
        self._shoe.load(cards, cover_after=cover_after)

    async def start_scenario(self) -> dict[str, Any] | None:
        """A fresh observer for the scenario; the table's retained ``state`` (None for a
        table that has published none yet)."""
        self._observer = Observer(self.rig.broker, f"{self.rig.prefix}/#", login=self._login)
        await self._observer.start()
        if self.session.last("state") is None:
            return None
        # Retained messages come just after the subscription: wait for the state.
        timeout = ONLINE_TIMEOUT_S * self.scale
        await self._observer.wait(lambda o: o.last("state") is not None, timeout)
        return self._observer.last("state")

    async def end_scenario(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            await observer.close()


def _empty_layout(obs: Observer) -> bool:
    state = obs.last("state")
    return state is None or not any(p["wagers"] for p in state["positions"])


def _after_round(round_id: int) -> Callable[[Observer], bool]:
    def after(obs: Observer) -> bool:
        state = obs.last("state")
        return state is not None and state["round_id"] > round_id

    return after


def _fresh(obs: Observer) -> bool:
    state = obs.last("state")
    return state is not None and state["phase"] == "shuffle_due" and not state["held"]


def _skipped(loaded: LoadedScenario, why: str) -> ScenarioResult:
    step = StepResult(0, None, "run the scenario", Status.SKIP, f"skipped: {why}")
    return ScenarioResult(loaded.name, loaded.path, datetime.now(UTC), 0.0, (step,))


async def _one(table: ExternalTable, loaded: LoadedScenario) -> ScenarioResult:
    loop = asyncio.get_running_loop()
    since, started = loop.time(), datetime.now(UTC)
    results: list[StepResult] = []
    runner: Runner | None = None
    try:
        await table.prepare(loaded.scenario)
        state = await table.start_scenario()
        runner = Runner(loaded, table, scale=table.scale)
        # The scenario's rounds count from its first (docs/scenarios.md).
        runner.seen.round_base = 0 if state is None else int(state["round_id"]) - 1
        runner.seen.dealer_before = None if state is None else state["dealer"]
        runner.seen.earlier_alerts = frozenset(a["alert"] for a in table.session.of("alerts"))
        await play(runner)
    except Exception as exc:  # the rig or the table failed: report it with the scenario
        results.append(rig_failed(exc, table.rig.broker))
    finally:
        await table.end_scenario()
    if runner is not None:
        results[:0] = runner.results
    timings = tuple(runner.timings) if runner is not None else ()
    seconds = round(loop.time() - since, 3)
    return ScenarioResult(loaded.name, loaded.path, started, seconds, tuple(results), timings)


async def run_external(
    rig: RigSection,
    scenarios: Sequence[LoadedScenario],
    *,
    progress: Callable[[ScenarioResult], None] | None = None,
) -> ExternalRun:
    """Play ``scenarios`` one after another on the table under test."""
    run = ExternalRun(rig)
    try:
        async with ExternalTable(rig) as table:
            run.status = await table.wait_online()
            for loaded in scenarios:
                why = table.cannot_run(loaded.scenario)
                result = _skipped(loaded, why) if why else await _one(table, loaded)
                run.results.append(result)
                if progress is not None:
                    progress(result)
            run.status = table.session.last("status") or run.status
            run.hello = table.shoe.hello
            run.board_serial = table.board.identity.serial
            run.alerts = len({a["alert"] for a in table.session.of("alerts")})
    except Exception as exc:  # the bench itself: a broker, a line or a table not there
        failed = rig_failed(exc, rig.broker)
        for loaded in scenarios[len(run.results) :]:
            result = ScenarioResult(loaded.name, loaded.path, datetime.now(UTC), 0.0, (failed,))
            run.results.append(result)
            if progress is not None:
                progress(result)
    return run
