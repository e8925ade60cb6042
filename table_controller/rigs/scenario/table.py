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
from drivers.sensors.frames import SpotsReport, encode_report
from drivers.shoe.frames import CardFrame, CoverFrame, MisreadFrame
from simulators.console import ConsoleSimulator
from simulators.sensors import SimulatedBoard
from simulators.shoe import ShoeSimulator
from table_controller.rigs.observer import Observer
from table_controller.rigs.scenario.steps import Device, PressStep, SkipStep
from table_controller.rigs.spots import SPOT_NUMBERS


class RigShoe(ShoeSimulator):
    """The simulated shoe, which can also lose a read for good (``lose``).

    A lost read takes its number but its frame never goes out, neither at the
    draw nor in answer to ``RESEND``: the controller sees a gap that no resend
    fills (docs/devices.md: ``SHOE_READ_GAP``).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lost_reads: set[int] = set()
        self.flipped_reads: set[int] = set()
        """Reads whose next frame goes out with one bit flipped (``flip``), once each."""
        self.twice_flipped_reads: set[int] = set()
        """Reads whose next frame goes out with a bit flipped twice (``flip`` ``twice``)."""

    def send_frame(self, frame: LineFrame) -> bool:
        if isinstance(frame, CardFrame | MisreadFrame | CoverFrame):
            if frame.n in self.lost_reads:
                return False
            if frame.n in self.flipped_reads and not self.hung:
                self.flipped_reads.discard(frame.n)
                return self.server.send(flip_bit(frame.encode()))
            if frame.n in self.twice_flipped_reads and not self.hung:
                self.twice_flipped_reads.discard(frame.n)
                return self.server.send(flip_twice(frame.encode()))
        return super().send_frame(frame)

    def power_cycle(self) -> None:
        self.lost_reads.clear()
        self.flipped_reads.clear()
        self.twice_flipped_reads.clear()
        super().power_cycle()


def flip_bit(encoded: bytes) -> bytes:
    """The frame with the low bit of its last payload byte flipped (before ``*``): the
    framing stays whole and only the checksum can tell (docs/devices.md)."""
    at = encoded.rindex(b"*") - 1
    return encoded[:at] + bytes([encoded[at] ^ 1]) + encoded[at + 1 :]


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


def flip_twice(encoded: bytes) -> bytes:
    """Bit 3 flipped in the first two bytes of the frame's first field (``$CARD,10,AS``
    to ``$CARD,98,AS``): an XOR checksum cannot see two flips of the same bit."""
    at = encoded.index(b",") + 1
    if not encoded[at : at + 2].isdigit():
        raise ValueError("flip twice needs a read number of two digits or more")
    flipped = bytes(b ^ 0x08 for b in encoded[at : at + 2])
    return encoded[:at] + flipped + encoded[at + 2 :]


def silence(table: ScenarioTable, device: Device, *, on: bool) -> None:
    """The device falls silent with its link up (``hang``), or talks again."""
    if device == "shoe":
        table.shoe.hang() if on else table.shoe.resume()
    elif device == "console":
        table.console.hang() if on else table.console.resume()
    else:
        table.board.mute(on)


def press_of(step: PressStep | SkipStep) -> tuple[str, str | int | None]:
    """The console button and argument a step presses."""
    if isinstance(step, SkipStep):
        return "SKIP", step.skip
    return step.action, step.arg


def send_without_values(board: SimulatedBoard) -> None:
    """One change of the board's spots with no VALUES before its SPOTS: the layout's
    ``seq`` advances, so the controller takes it as a new, value-less snapshot."""
    layout = board.layout
    layout.seq = (layout.seq + 1) & 0xFF
    board.inject_in(encode_report(SpotsReport(layout.seq, layout.present, layout.fault)))
