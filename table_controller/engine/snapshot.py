"""The table as one immutable, serialisable value: ``EngineSnapshot``.

A snapshot holds everything the engine knows (docs/rules.md, last paragraph), so
``RoundEngine.from_snapshot(setup, snap)`` carries on exactly where
``engine.snapshot()`` was taken. Views are drawn from it, replay checks
compare it, and the journal checkpoints it: ``to_json`` gives a JSON-ready
object carrying ``SNAPSHOT_VERSION``, and ``from_json`` reads one back
(``SnapshotError`` naming the field if it is malformed or of another version).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import TypeVar

from table_controller.engine.domain import (
    Alert,
    CardSlot,
    Decision,
    DeviceState,
    LatchedBy,
    Outcome,
    Phase,
    Role,
    Spots,
    Stats,
    Wager,
)
from table_controller.engine.errors import SnapshotError
from table_controller.engine.inputs import DEVICE_NAMES, DeviceName
from table_controller.engine.jsonform import from_jsonable, to_jsonable
from table_controller.engine.outputs import Refusal
from table_controller.engine.table import Hand, Round, Shoe, Table

_T = TypeVar("_T")
# Raised whenever the snapshot's form changes; an older form is refused.
SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class ShoeSnapshot:
    number: int
    id: str | None
    counts: tuple[int, ...]
    cards_read: int
    cover_seen: bool
    cover_n: int | None
    burns_due: int


@dataclass(frozen=True, slots=True)
class HandSnapshot:
    position: int
    initial: Wager
    tie: Wager | None
    war: Wager | None
    war_tie: Wager | None
    outcome: Outcome | None
    decision: Decision | None
    war_outcome: Outcome | None
    skipped: bool


@dataclass(frozen=True, slots=True)
class RoundSnapshot:
    latched: bool
    latched_by: LatchedBy | None
    valued: bool
    started: datetime | None
    hands: tuple[HandSnapshot, ...]
    void_ties: tuple[tuple[int, int | None], ...]
    closed: tuple[int, ...]
    cards: tuple[CardSlot, ...]
    plan: tuple[tuple[Role, int | None], ...]
    plan_i: int
    deal_started: bool
    original_settled: bool
    alert_ids: tuple[str, ...]
    discards: tuple[tuple[int, str | None], ...]
    late_warned: tuple[int, ...]
    differences: tuple[tuple[int, str], ...]

    def hand(self, position: int) -> HandSnapshot | None:
        for h in self.hands:
            if h.position == position:
                return h
        return None

    def card_of(self, role: Role, position: int | None = None) -> str | None:
        """The card dealt in ``role`` (to ``position``), None if not dealt or unknown."""
        for c in self.cards:
            if c.role is role and c.position == position:
                return c.card
        return None


@dataclass(frozen=True, slots=True)
class AlertsSnapshot:
    open: tuple[Alert, ...]
    raised: int
    refused: tuple[tuple[str, datetime], ...]


@dataclass(frozen=True, slots=True)
class ConsoleSnapshot:
    answers: tuple[tuple[int, Refusal | None], ...]
    floor: int
    top: int


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """Everything one table's engine knows, at one moment."""

    version: int
    rules: str
    decks: int
    positions: int
    seq: int
    phase: Phase
    round_id: int
    dealer: str | None
    last_read_n: int
    shoe: ShoeSnapshot
    round: RoundSnapshot
    spots: Spots
    alerts: AlertsSnapshot
    devices: tuple[DeviceState, ...]
    sensors_check_due: bool
    sensors_valued: bool
    console: ConsoleSnapshot
    stats: Stats

    @property
    def held(self) -> bool:
        """A critical alert is open: nothing is settled until it is resolved."""
        return bool(self.alerts.open)

    def device(self, name: DeviceName) -> DeviceState:
        return self.devices[DEVICE_NAMES.index(name)]

    def to_json(self) -> dict[str, object]:
        """The JSON-ready form (a dict of lists, str, int, bool and None)."""
        out = to_jsonable(self)
        assert isinstance(out, dict)
        return out

    @classmethod
    def from_json(cls, data: object) -> EngineSnapshot:
        """The snapshot ``to_json`` gave; ``SnapshotError`` naming what is wrong otherwise."""
        if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
            version = data.get("version") if isinstance(data, dict) else None
            raise SnapshotError(
                f"snapshot version {version!r}: this engine reads version {SNAPSHOT_VERSION}"
            )
        snap = from_jsonable(cls, data, "snapshot")
        assert isinstance(snap, EngineSnapshot)
        return snap


_GETTERS: dict[type, Callable[[object], tuple[object, ...]]] = {}


def _same_fields(cls: type[_T], obj: object) -> _T:
    """A ``cls`` with the same-named fields of ``obj`` (a hand and its snapshot)."""
    getter = _GETTERS.get(cls)
    if getter is None:  # once a class: its fields, in order, read in one call
        getter = _GETTERS[cls] = operator.attrgetter(*(f.name for f in fields(cls)))  # type: ignore[arg-type]
    return cls(*getter(obj))


def take(t: Table) -> EngineSnapshot:
    """The snapshot of a working table."""
    rnd = t.round
    shoe = t.shoe
    return EngineSnapshot(
        version=SNAPSHOT_VERSION,
        rules=t.setup.rules.name.value,
        decks=t.setup.decks,
        positions=t.setup.positions,
        seq=t.seq,
        phase=t.phase,
        round_id=t.round_id,
        dealer=t.dealer,
        last_read_n=t.last_read_n,
        shoe=ShoeSnapshot(
            shoe.number,
            shoe.id,
            tuple(shoe.counts),
            shoe.cards_read,
            shoe.cover_seen,
            shoe.cover_n,
            shoe.burns_due,
        ),
        round=RoundSnapshot(
            latched=rnd.latched,
            latched_by=rnd.latched_by,
            valued=rnd.valued,
            started=rnd.started,
            hands=tuple(_same_fields(HandSnapshot, h) for h in rnd.hands.values()),
            void_ties=tuple(rnd.void_ties),
            closed=tuple(rnd.closed),
            cards=tuple(rnd.cards),
            plan=tuple(rnd.plan),
            plan_i=rnd.plan_i,
            deal_started=rnd.deal_started,
            original_settled=rnd.original_settled,
            alert_ids=tuple(rnd.alert_ids),
            discards=tuple(rnd.discards),
            late_warned=tuple(sorted(rnd.late_warned)),
            differences=tuple(sorted(rnd.differences.items())),
        ),
        spots=t.spots,
        alerts=AlertsSnapshot(
            tuple(t.open_alerts), t.alerts_raised, tuple(sorted(t.refused.items()))
        ),
        devices=tuple(t.devices[name] for name in DEVICE_NAMES),
        sensors_check_due=t.sensors_check_due,
        sensors_valued=t.sensors_valued,
        console=ConsoleSnapshot(tuple(t.answers.items()), t.answers_floor, t.answers_top),
        stats=t.stats,
    )


def restore(t: Table, snap: EngineSnapshot) -> None:
    """Set a fresh working table to ``snap`` (its setup already checked)."""
    r = snap.round
    s = snap.shoe
    t.seq = snap.seq
    t.phase = snap.phase
    t.round_id = snap.round_id
    t.dealer = snap.dealer
    t.last_read_n = snap.last_read_n
    t.shoe = Shoe(
        s.number, s.id, list(s.counts), s.cards_read, s.cover_seen, s.cover_n, s.burns_due
    )
    t.round = Round(
        latched=r.latched,
        latched_by=r.latched_by,
        valued=r.valued,
        started=r.started,
        hands={h.position: _same_fields(Hand, h) for h in r.hands},
        void_ties=list(r.void_ties),
        closed=list(r.closed),
        cards=list(r.cards),
        plan=list(r.plan),
        plan_i=r.plan_i,
        deal_started=r.deal_started,
        original_settled=r.original_settled,
        alert_ids=list(r.alert_ids),
        discards=list(r.discards),
        late_warned=set(r.late_warned),
        differences=dict(r.differences),
    )
    t.spots = snap.spots
    t.open_alerts = list(snap.alerts.open)
    t.alerts_raised = snap.alerts.raised
    t.refused = dict(snap.alerts.refused)
    t.devices = dict(zip(DEVICE_NAMES, snap.devices, strict=True))
    t.sensors_check_due = snap.sensors_check_due
    t.sensors_valued = snap.sensors_valued
    t.answers = dict(snap.console.answers)
    t.answers_floor = snap.console.floor
    t.answers_top = snap.console.top
    t.stats = snap.stats
