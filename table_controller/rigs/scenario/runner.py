"""Playing one scenario's steps on a table, and collecting how each went.

Actions later steps depend on (a bet, a press, a card) wait until the controller
has taken them, so a scenario plays the same way although the devices reach the
controller over separate connections; each such wait times the step, from the
rig's write to the message that shows it taken (docs/scenarios.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any, Final

from drivers.console.frames import ConsoleAction, NakFrame
from drivers.shoe.frames import ShoeCondition
from simulators.console import ConsoleRestartedError
from simulators.shoe import ShoeEmptyError
from table_controller.rigs.scenario import table as tables
from table_controller.rigs.scenario.compare import show
from table_controller.rigs.scenario.evidence import Evidence, Verdict, caused_by
from table_controller.rigs.scenario.expect import StateExpect
from table_controller.rigs.scenario.fields import COVER
from table_controller.rigs.scenario.loading import LoadedScenario
from table_controller.rigs.scenario.results import Status, StepFailed, StepResult, StepTiming
from table_controller.rigs.scenario.steps import (
    BetStep,
    BrokerStep,
    CardStep,
    Device,
    DrawStep,
    DropStep,
    ExpectAlertStep,
    ExpectEventStep,
    ExpectNoAlertStep,
    ExpectPhaseStep,
    ExpectRoundStep,
    ExpectStateStep,
    ExpectStep,
    FlipStep,
    HangStep,
    KillStep,
    LoseStep,
    MisreadStep,
    PressStep,
    ReplugStep,
    RestartStep,
    ResumeStep,
    SensorFaultStep,
    ShoeStatusStep,
    SkipStep,
    Step,
    UnplugStep,
    ValuesLostStep,
    cards_of,
)
from table_controller.rigs.scenario.table import ScenarioTable
from table_controller.rigs.spots import SPOT_NUMBERS, spot_bit

ONLINE_TIMEOUT_S: Final = 15.0
"""How long the controller may take to report itself and every device online."""
DEVICES: Final = frozenset({"shoe", "console", "sensors"})


class Runner:
    """Plays one scenario's steps on a started table and collects the results.

    ``scale`` multiplies every timeout (``timeout_scale`` of a slow bench).
    """

    def __init__(self, loaded: LoadedScenario, table: ScenarioTable, *, scale: float = 1.0):
        self.loaded = loaded
        self.scenario = loaded.scenario
        self.table = table
        self.scale = scale
        self.seen = Evidence(table.observer)
        self.results: list[StepResult] = []
        self.timings: list[StepTiming] = []
        self.unplugged: set[str] = set()
        self.silent: set[str] = set()
        self.broker_down = False
        self.pending: list[tuple[int, PressStep | SkipStep, int, float]] = []
        self.loop = asyncio.get_running_loop()

    def _quiet(self, device: str) -> bool:
        return device in self.unplugged or device in self.silent

    def _record(
        self, number: int, step: Step | str, status: Status, detail: str, since: float
    ) -> None:
        text = step if isinstance(step, str) else step.describe()
        line = self.loaded.line_of(number)
        seconds = round(self.loop.time() - since, 3)
        self.results.append(StepResult(number, line, text, status, detail, seconds))

    def _time(self, number: int, step: Step, caused: str, written: float, arrived: float) -> None:
        ms = round((arrived - written) * 1e3, 3)
        self.timings.append(
            StepTiming(number, self.loaded.line_of(number), step.describe(), caused, ms)
        )

    # -- start and end -------------------------------------------------------------

    async def ready(self) -> None:
        """Wait until the controller says it is online with every device ok."""

        def online() -> bool | None:
            status = self.seen.obs.last("status")
            ok = status is not None and status["online"]
            return True if ok and set(self.seen.devices().values()) == {"ok"} else None

        timeout = ONLINE_TIMEOUT_S * self.scale
        if await self.seen.until(online, timeout) is None:
            raise StepFailed(
                f"the controller did not report itself and its devices online within "
                f"{timeout:g} s; devices: {show(self.seen.devices())}"
            )

    async def play(self) -> None:
        for number, step in enumerate(self.scenario.steps, 1):
            since = self.loop.time()
            try:
                verdict = await self._play(number, step)
            except StepFailed as exc:
                self._record(number, step, Status.FAIL, str(exc), since)
                return
            except (ShoeEmptyError, OSError, RuntimeError, ValueError) as exc:
                self._record(number, step, Status.ERROR, f"{type(exc).__name__}: {exc}", since)
                return
            if verdict is not None:
                self._record(number, step, verdict[0], verdict[1], since)
        await self._settle_pending(final=True)

    async def close(self) -> None:
        """Put the broker back, so that the controller's last status goes out at its stop."""
        if self.broker_down:
            await self.table.broker(up=True)
            self.broker_down = False

    # -- steps ---------------------------------------------------------------------

    async def _play(self, number: int, step: Step) -> Verdict | None:
        timeout = self.scenario.timeout_s
        if isinstance(step, ExpectStep) and step.timeout is not None:
            timeout = step.timeout
        timeout *= self.scale
        match step:
            case BetStep():
                await self._bet(number, step, timeout)
            case PressStep():
                return await self._press(number, step, timeout)
            case DrawStep() | MisreadStep() | DropStep() | FlipStep() | LoseStep():
                await self._cards(number, step, timeout)
            case UnplugStep():
                await self.table.unplug(step.unplug)
                self.unplugged.add(step.unplug)
                await self._device_state(step.unplug, "offline", timeout)
            case ReplugStep():
                if step.replug not in self.unplugged:
                    raise StepFailed(f"the {step.replug} is not unplugged")
                await self.table.replug(step.replug)
                self.unplugged.discard(step.replug)
                await self._back(step.replug, timeout)
            case HangStep():
                self._hang(step.hang, on=True)
            case ResumeStep():
                self._hang(step.resume, on=False)
                await self._back(step.resume, timeout)
            case RestartStep():
                return await self._restart(step.restart)
            case KillStep():
                return await self._controller(self.table.kill_controller)
            case ValuesLostStep():
                tables.send_without_values(self.table.board)
            case ShoeStatusStep():
                self.table.shoe.set_state(ShoeCondition(step.shoe_status))
            case SkipStep():
                return await self._press(number, step, timeout)
            case SensorFaultStep():
                fault, board = step.sensor_fault, self.table.board
                board.set_fault(spot_bit(fault.position, fault.spot), fault.faulty)
                # The table has the board's flags before the next step acts on them.
                await self._device_state("sensors", "fault" if board.fault else "ok", timeout)
            case BrokerStep():
                return await self._broker(step.broker, timeout)
            case ExpectPhaseStep():
                return await self.seen.expect_state(StateExpect(phase=step.expect_phase), timeout)
            case ExpectStateStep():
                return await self.seen.expect_state(step.expect_state, timeout)
            case ExpectAlertStep():
                return await self.seen.expect_alert(step.expect_alert, timeout)
            case ExpectNoAlertStep():
                return self.seen.expect_no_alert(step.expect_no_alert)
            case ExpectEventStep():
                return await self.seen.expect_event(step.expect_event, timeout)
            case ExpectRoundStep():
                return await self.seen.expect_round(step.expect_round, timeout)
        return None

    async def _bet(self, number: int, step: BetStep, timeout: float) -> None:
        spec = step.bet
        problem = self.seen.tie_spot_problem(spec, self.scenario.table.war_tie_allowed)
        if problem is not None:
            raise StepFailed(problem)
        written = self.loop.time()
        self.table.board.set_spots(
            {
                (spec.position, SPOT_NUMBERS["initial"]): spec.initial,
                (spec.position, SPOT_NUMBERS["tie"]): spec.tie_spot,
                (spec.position, SPOT_NUMBERS["war"]): spec.war,
            }
        )
        if not step.wait or self._quiet("sensors") or self.broker_down:
            return
        want = tables.layout(self.table.board, rfid=self.table.rfid)
        shows = await self.seen.until(lambda: True if self.seen.shown() == want else None, timeout)
        if shows is None:
            raise StepFailed(
                f"the controller did not show the wagers {show(want)} within {timeout:g} s; "
                f"it shows {show(self.seen.shown())}"
            )
        self._time(number, step, "state", written, self.loop.time())

    async def _answer(self, k: int, timeout: float) -> str:
        try:
            async with asyncio.timeout(timeout):
                answer = await self.table.console.answer(k)
        except TimeoutError:
            raise StepFailed(f"press {k} got no answer within {timeout:g} s") from None
        except ConsoleRestartedError:
            raise StepFailed(f"the console restarted before press {k} was answered") from None
        return f"NAK {answer.reason}" if isinstance(answer, NakFrame) else "ACK"

    @staticmethod
    def _judge(step: PressStep | SkipStep, answer: str) -> Verdict | None:
        if step.expect is None:
            return None
        if answer == step.expect:
            return Status.PASS, ""
        return Status.FAIL, f"answered {answer}"

    async def _press(
        self, number: int, step: PressStep | SkipStep, timeout: float
    ) -> Verdict | None:
        written = self.loop.time()
        if isinstance(step, SkipStep) and "SKIP" not in ConsoleAction.__members__:
            raise StepFailed("this console driver has no SKIP action (§(h)(3)(iii)) yet")
        k = self.table.console.press(*tables.press_of(step))
        if self._quiet("console"):
            # Sent (again) when the console is back; judged then (docs/devices.md: the
            # console sends an unanswered press again after a reconnect).
            self.pending.append((number, step, k, written))
            return None
        answer = await self._answer(k, timeout)
        self._time(number, step, "answer", written, self.loop.time())
        return self._judge(step, answer)

    async def _settle_pending(self, *, final: bool = False) -> None:
        pending, self.pending = self.pending, []
        for number, step, k, since in pending:
            if final and self._quiet("console"):
                if step.expect is not None:
                    detail = f"press {k} was never answered: the console was not back"
                    self._record(number, step, Status.FAIL, detail, since)
                continue
            answer = await self._answer(k, self.scenario.timeout_s * self.scale)
            verdict = self._judge(step, answer)
            if verdict is not None:
                self._record(number, step, verdict[0], verdict[1], since)

    async def _cards(self, number: int, step: CardStep, timeout: float) -> None:
        spec = cards_of(step)
        count = spec if isinstance(spec, int) else len(spec)
        shoe = self.table.shoe
        reads: list[tuple[int, bool, str, float]] = []
        for i in range(count):
            order = shoe.order
            index = len(order) - shoe.remaining
            if index >= len(order):
                raise StepFailed(f"the shoe is empty (card {i + 1} of {count} of this step)")
            physical = order[index]
            text = COVER if physical is None else str(physical)
            if isinstance(spec, tuple) and spec[i] != text:
                raise StepFailed(
                    f"the shoe's next card is {text}, not {spec[i]} (card {i + 1} of this step)"
                )
            written = self.loop.time()
            if isinstance(step, FlipStep):
                flipped = shoe.twice_flipped_reads if step.twice else shoe.flipped_reads
                flipped.add(shoe.last_n + 1)
            read = shoe.draw(
                misread=isinstance(step, MisreadStep), drop=isinstance(step, DropStep | LoseStep)
            )
            if isinstance(step, LoseStep):
                shoe.lost_reads.add(read.n)
            reads.append((read.n, physical is None, text, written))
        if isinstance(step, LoseStep) or not step.wait or self._quiet("shoe") or self.broker_down:
            return
        slowest: tuple[float, str] | None = None
        for n, cover, text, written in reads:
            found = await self.seen.until(partial(self.seen.taken, n, cover), timeout)
            if found is None:
                raise StepFailed(
                    f"the controller did not take read {n} ({text}) within {timeout:g} s: no "
                    f"card event and no alert for it; last state: {show(self.seen.state_brief())}"
                )
            arrived = self.seen.obs.arrival(found)
            caused = caused_by(found)
            if slowest is None or arrived - written > slowest[0]:
                slowest = (arrived - written, caused)
        if slowest is not None:
            # The slowest read of the step: one card is one write, and its event one message.
            self._time(number, step, slowest[1], 0.0, slowest[0])

    async def _device_state(self, device: str, want: str, timeout: float) -> None:
        """Wait until the controller's status shows ``device`` in state ``want``."""
        if self.broker_down:
            return

        def shows() -> bool | None:
            return True if self.seen.devices().get(device) == want else None

        if await self.seen.until(shows, timeout) is None:
            raise StepFailed(
                f"the controller did not report the {device} {want} within {timeout:g} s; "
                f"devices: {show(self.seen.devices())}"
            )

    def _hang(self, device: Device, *, on: bool) -> None:
        tables.silence(self.table, device, on=on)
        if on:
            self.silent.add(device)
        else:
            self.silent.discard(device)

    async def _back(self, device: str, timeout: float) -> None:
        if self._quiet(device):
            return
        await self._device_state(device, "ok", timeout)
        if device == "console":
            await self._settle_pending()

    async def _restart(self, what: str) -> Verdict | None:
        if what == "shoe":
            self.seen.shoe_restarted()
            self.table.shoe.power_cycle()
        elif what == "console":
            for number, step, k, since in self.pending:
                if step.expect is not None:
                    detail = f"the console restarted before press {k} was answered"
                    self._record(number, step, Status.FAIL, detail, since)
            self.pending = []
            self.table.console.restart()
        else:
            return await self._controller(self.table.restart_controller)
        return None

    async def _controller(self, action: Callable[[], Any]) -> Verdict | None:
        """Restart or kill the controller, then wait until it is back online."""
        before = len(self.seen.obs.of("status"))
        why_not: str | None = await action()
        if why_not is not None:
            return Status.SKIP, why_not
        up = DEVICES - self.unplugged - self.silent

        def online() -> bool | None:
            fresh = self.seen.obs.of("status")[before:]
            devices = self.seen.devices()
            ok = any(s["online"] for s in fresh) and all(devices.get(d) == "ok" for d in up)
            return True if ok else None

        timeout = ONLINE_TIMEOUT_S * self.scale
        if not self.broker_down and await self.seen.until(online, timeout) is None:
            raise StepFailed(
                f"the controller did not come back online within {timeout:g} s; "
                f"devices: {show(self.seen.devices())}"
            )
        return None

    async def _broker(self, what: str, timeout: float) -> Verdict | None:
        if what == "down":
            why_not = await self.table.broker(up=False)
            if why_not is not None:
                return Status.SKIP, why_not
            self.broker_down = True
            return None
        before = len(self.seen.obs.of("status"))
        why_not = await self.table.broker(up=True)
        if why_not is not None:
            return Status.SKIP, why_not
        self.broker_down = False

        # The controller connects again and says so (docs/feed.md: status on every connect).
        def online() -> bool | None:
            return True if any(s["online"] for s in self.seen.obs.of("status")[before:]) else None

        if await self.seen.until(online, max(timeout, ONLINE_TIMEOUT_S * self.scale)) is None:
            raise StepFailed(f"the controller did not reconnect to the broker within {timeout:g} s")
        return None
