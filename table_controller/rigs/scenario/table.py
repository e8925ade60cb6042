"""The table a scenario plays on, as the runner sees it.

Two kinds: a whole table on loopback that the runner starts itself
(:mod:`table_controller.rigs.scenario.local`), and a table under test that
the runner only reaches over its cables and its broker
(:mod:`table_controller.rigs.scenario.external`). Both give the simulated
devices, an observer of the table's topics, and the controls that only one of
them may have (a broker to take away, a controller to restart); a control the
table lacks says why, and the step is reported skipped.
"""

from __future__ import annotations

from typing import Any, Protocol

from drivers.lineframe.codec import LineFrame
from drivers.shoe.frames import CardFrame, CoverFrame, MisreadFrame
from simulators.console import ConsoleSimulator
from simulators.sensors import SimulatedBoard
from simulators.shoe import ShoeSimulator
from table_controller.rigs.observer import Observer
from table_controller.rigs.scenario.steps import Device
from table_controller.rigs.spots import SPOT_NUMBERS


class RigShoe(ShoeSimulator):
    """The simulated shoe, which can also lose a read for good (``lose``).

    A lost read takes its number but its frame never goes out, neither at the
    draw nor in answer to ``RESEND``: the controller sees a gap that no resend
    fills (DEVICES.md: ``SHOE_READ_GAP``).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lost_reads: set[int] = set()

    def send_frame(self, frame: LineFrame) -> bool:
        if isinstance(frame, CardFrame | MisreadFrame | CoverFrame) and frame.n in self.lost_reads:
            return False
        return super().send_frame(frame)

    def power_cycle(self) -> None:
        self.lost_reads.clear()
        super().power_cycle()


class ScenarioTable(Protocol):
    """The devices a scenario plays and the controller it observes."""

    @property
    def shoe(self) -> RigShoe: ...

    @property
    def console(self) -> ConsoleSimulator: ...

    @property
    def board(self) -> SimulatedBoard: ...

    @property
    def rfid(self) -> bool:
        """The board reports chip values (else presence only)."""
        ...

    @property
    def observer(self) -> Observer: ...

    async def unplug(self, device: Device) -> None:
        """Pull the device's cable: the controller's end sees the line go."""

    async def replug(self, device: Device) -> None:
        """Put the cable back."""

    async def restart_controller(self) -> str | None:
        """Stop the controller cleanly and start it again; or why that cannot be done here."""

    async def kill_controller(self) -> str | None:
        """Kill the controller without warning and start it again; or why not here."""

    async def broker(self, up: bool) -> str | None:
        """Take the broker away from the controller (or give it back); or why not here."""


def layout(board: SimulatedBoard, *, rfid: bool) -> dict[int, dict[str, int | None]]:
    """The wagers on the board now, as the controller's ``state`` should show them."""
    names = {v: k for k, v in SPOT_NUMBERS.items()}
    out: dict[int, dict[str, int | None]] = {}
    for bit, cents in board.values:
        position, spot = bit // 3 + 1, bit % 3
        out.setdefault(position, {})[names[spot]] = cents if rfid else None
    return out
