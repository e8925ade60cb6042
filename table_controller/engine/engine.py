"""``RoundEngine``: one table's rules applied to its inputs, one at a time.

``feed(input) -> outputs`` is the whole game: no I/O, no clock (time comes in
each input's ``at``), never raises on any input. ``snapshot()`` is the table
as an immutable value; ``from_snapshot`` carries on from one. ``replay``
rebuilds a table from its journal of inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from table_controller.engine.alerts import on_service_alert
from table_controller.engine.betting import lights_now, on_spots
from table_controller.engine.console import on_press, on_renumbered
from table_controller.engine.dealing import on_card, on_cover, on_gap, on_misread, settle_original
from table_controller.engine.devices import on_offline, on_online, on_refused, on_shoe_status
from table_controller.engine.domain import Phase, TableSetup
from table_controller.engine.errors import SnapshotError
from table_controller.engine.inputs import (
    CardRead,
    ConsolePress,
    CoverRead,
    DeviceOffline,
    DeviceOnline,
    Input,
    Misread,
    PressesRenumbered,
    PublishRefused,
    ReadGap,
    ServiceAlert,
    ShoeStatus,
    SpotsChanged,
)
from table_controller.engine.outputs import Output
from table_controller.engine.snapshot import EngineSnapshot, restore, take
from table_controller.engine.table import Table
from table_controller.engine.war import settle_war, tied_undecided

HANDLERS: Final[dict[type[Any], Callable[[Table, Any], None]]] = {
    CardRead: on_card,
    Misread: on_misread,
    CoverRead: on_cover,
    ReadGap: on_gap,
    SpotsChanged: on_spots,
    ConsolePress: on_press,
    PressesRenumbered: on_renumbered,
    DeviceOnline: on_online,
    DeviceOffline: on_offline,
    ShoeStatus: on_shoe_status,
    PublishRefused: on_refused,
    ServiceAlert: on_service_alert,
}


def advance(t: Table) -> None:
    """Settle whatever is complete, unless held (docs/rules.md: never settle on uncertain data)."""
    rnd = t.round
    if t.open_alerts or not rnd.latched or rnd.plan_i < len(rnd.plan):
        return
    if not rnd.hands:
        # docs/rules.md rule 3: a latch that left no position playing deals nothing and
        # settles nothing: only VOID_ROUND ends that round.
        return
    if any(c.pending for c in rnd.cards):
        return
    if t.phase is Phase.DEALING:
        settle_original(t)
    elif t.phase is Phase.WAR_DEALING:
        settle_war(t)


class RoundEngine:
    """The rules of one table; ``feed`` applies an input and returns what to do."""

    __slots__ = ("_table",)

    def __init__(self, setup: TableSetup) -> None:
        self._table = Table(setup)

    @property
    def setup(self) -> TableSetup:
        return self._table.setup

    # A few facts read often, without taking a whole snapshot.

    @property
    def phase(self) -> Phase:
        return self._table.phase

    @property
    def held(self) -> bool:
        return self._table.held

    @property
    def lights(self) -> int:
        """The layout's lights now (what the last ``SetLights`` said), from the state."""
        return lights_now(self._table)

    @property
    def round_id(self) -> int:
        return self._table.round_id

    @property
    def last_read_n(self) -> int:
        """The last read number taken (the shoe driver resumes after it)."""
        return self._table.last_read_n

    @property
    def answered_up_to(self) -> int:
        """The highest console press number answered."""
        return self._table.answers_top

    @property
    def cover_seen(self) -> bool:
        return self._table.shoe.cover_seen

    def undecided_ties(self) -> list[int]:
        """The tied positions still to choose war or surrender (§(i)(3))."""
        return [h.position for h in tied_undecided(self._table)]

    def feed(self, inp: Input) -> list[Output]:
        handler = HANDLERS.get(type(inp))
        if handler is None:  # a Tick: time passing, nothing else
            return []
        t = self._table
        t.at = inp.at
        out: list[Output] = []
        t.out = out
        handler(t, inp)
        rnd = t.round
        if rnd.latched and rnd.plan_i == len(rnd.plan):
            # The deal is complete: settle it, unless held.
            advance(t)
        return out

    def snapshot(self) -> EngineSnapshot:
        """The table now, as an immutable, serialisable value."""
        return take(self._table)

    @classmethod
    def from_snapshot(cls, setup: TableSetup, snapshot: EngineSnapshot) -> RoundEngine:
        """The engine carrying on from ``snapshot``, which must be of a table of ``setup``."""
        taken_of = (snapshot.rules, snapshot.decks, snapshot.positions)
        if taken_of != (setup.rules.name.value, setup.decks, setup.positions):
            raise SnapshotError(
                f"the snapshot belongs to a different table setup "
                f"(rules {snapshot.rules}, {snapshot.decks} decks, {snapshot.positions} positions)"
            )
        engine = cls(setup)
        restore(engine._table, snapshot)
        return engine


def replay(
    setup: TableSetup, inputs: Iterable[Input], start: EngineSnapshot | None = None
) -> tuple[RoundEngine, list[Output]]:
    """The table rebuilt from its journal (after ``start``, if given), and every output."""
    engine = RoundEngine(setup) if start is None else RoundEngine.from_snapshot(setup, start)
    outputs: list[Output] = []
    for inp in inputs:
        outputs.extend(engine.feed(inp))
    return engine, outputs
