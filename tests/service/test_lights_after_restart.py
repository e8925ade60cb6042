"""The layout lights after a power cut: the board, powered from the table PC, lost them with
it, and the table rebuilt from its journal lights them again from its state at once, not
at the game's next change of lights (which a table waiting on a decision never makes)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from simulators.board import SimulatedBoard
from table_controller.engine import ConsolePress, DeviceOnline, Phase, SetLights, SpotsChanged
from table_controller.engine.inputs import CardRead
from table_controller.service.devices import sensors_task
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config

T0 = datetime(2025, 1, 1, 12, tzinfo=UTC)
WAR_SPOT_P1 = 1 << 2  # position 1's war spot: bit (1 - 1) * 3 + 2
LIGHTS_TIMEOUT_S = 30.0


def test_a_tie_decision_lights_its_war_spot_again_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    cfg = config(path)
    times = (T0 + timedelta(seconds=s) for s in range(1, 100))

    async def scenario() -> None:
        runner = TableRunner(cfg, Journal(path))
        runner.handle(DeviceOnline(next(times), "shoe"))
        runner.handle(DeviceOnline(next(times), "console"))
        runner.handle(DeviceOnline(next(times), "sensors"))
        runner.handle(ConsolePress(next(times), 1, "SHUFFLED", None))
        runner.handle(ConsolePress(next(times), 2, "DEALER", "D-1"))
        runner.handle(SpotsChanged(next(times), 1, 0, ((0, 2500),)))
        runner.handle(ConsolePress(next(times), 3, "NO_MORE_BETS", None))
        for k, card in enumerate(("9C", "7H", "7S"), start=1):  # burn, P1 7, dealer 7
            runner.handle(CardRead(next(times), k, card))
        assert runner.engine.phase is Phase.TIE_DECISION
        lit = []
        while not runner.lights_out.empty():
            lit.append(runner.lights_out.get_nowait())
        assert lit[-1] == SetLights(WAR_SPOT_P1)
        runner.journal.close()  # the power is cut

        again = TableRunner(cfg, Journal(path))
        try:
            assert again.engine.phase is Phase.TIE_DECISION
            async with SimulatedBoard() as board:  # a board that lost its lights too
                board.set_spot(1, 0, 2500)
                task = asyncio.create_task(sensors_task(again, board.url))
                try:
                    async with asyncio.timeout(LIGHTS_TIMEOUT_S):
                        await board.wait_lights(WAR_SPOT_P1)
                finally:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        finally:
            again.journal.close()

    asyncio.run(scenario())
