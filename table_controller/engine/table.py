"""The table as the engine works on it: mutable, owned by one ``RoundEngine``.

Everything the table knows is here (docs/rules.md, last paragraph): the shoe (id,
composition, cover seen, burn due), the dealer, the round in progress, open
alerts, the last read number and the answers given to console presses. The
rule modules change it in place while handling one input and append their
outputs to ``out``; ``snapshot.py`` turns it into an immutable, serialisable
value and back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from table_controller.engine.cards import DECK
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
    TableSetup,
    Wager,
)
from table_controller.engine.inputs import DEVICE_NAMES, DeviceName
from table_controller.engine.outputs import Event, EventType, Output, Refusal

# How many console answers are remembered for repeated presses. The console
# re-sends only presses it has not seen answered, so a short memory suffices.
CONSOLE_MEMORY: Final = 64


@dataclass(slots=True)
class Shoe:
    """The shoe in play (``id`` None before the first ``SHUFFLED``)."""

    number: int = 0
    id: str | None = None
    # Copies read of each card of ``cards.DECK`` in this shoe (FOREIGN_CARD).
    counts: list[int] = field(default_factory=lambda: [0] * len(DECK))
    # Every read taken from this shoe: cards, misreads, burns (not the cover).
    cards_read: int = 0
    cover_seen: bool = False
    cover_n: int | None = None
    # §(h)(1): cards still to burn before the next deal; a flag in effect, set
    # (never added to) by a new shoe or a new dealer.
    burns_due: int = 0


@dataclass(slots=True)
class Hand:
    """A playing position of the round (its initial spot held chips at the latch)."""

    position: int
    initial: Wager
    tie: Wager | None = None
    war: Wager | None = None
    war_tie: Wager | None = None
    outcome: Outcome | None = None
    decision: Decision | None = None
    war_outcome: Outcome | None = None
    # §(h)(3)(iii), SKIP: the dealer dealt it no card; its wagers are void.
    skipped: bool = False


@dataclass(slots=True)
class Round:
    """The round open for betting or in progress."""

    latched: bool = False
    latched_by: LatchedBy | None = None
    # The latch came from a board that reports values (RFID chips).
    valued: bool = False
    started: datetime | None = None
    # The playing positions, by position in ascending order.
    hands: dict[int, Hand] = field(default_factory=dict)
    # §(h)(3)(iii): tie wagers of positions without an initial wager: void.
    void_ties: list[tuple[int, int | None]] = field(default_factory=list)
    # docs/rules.md rule 3: positions closed at the latch by a faulty initial-spot sensor.
    closed: list[int] = field(default_factory=list)
    cards: list[CardSlot] = field(default_factory=list)
    # The cards of the deal in order, (role, position); ``plan_i`` are taken.
    plan: list[tuple[Role, int | None]] = field(default_factory=list)
    plan_i: int = 0
    deal_started: bool = False
    original_settled: bool = False
    alert_ids: list[str] = field(default_factory=list)
    # Cards read when none was due (UNEXPECTED_CARD), set aside: (n, card).
    discards: list[tuple[int, str | None]] = field(default_factory=list)
    # Spots already warned as LATE_WAGER this round (bits).
    late_warned: set[int] = field(default_factory=set)
    # docs/rules.md: each guarded spot's last difference from its latched amount
    # that was raised (bit -> difference); raised again only when it changes.
    differences: dict[int, str] = field(default_factory=dict)

    def hand(self, position: int | None) -> Hand | None:
        return self.hands.get(position) if position is not None else None

    def next_due(self) -> tuple[Role, int | None] | None:
        """The place of the next card of the deal, None when none is due."""
        return self.plan[self.plan_i] if self.latched and self.plan_i < len(self.plan) else None


@dataclass(slots=True)
class Table:
    """One table's whole state, and the outputs of the input being handled."""

    setup: TableSetup
    seq: int = 0
    phase: Phase = Phase.SHUFFLE_DUE
    round_id: int = 1
    dealer: str | None = None
    last_read_n: int = 0
    shoe: Shoe = field(default_factory=Shoe)
    round: Round = field(default_factory=Round)
    spots: Spots = field(default_factory=Spots)
    # Only critical alerts stay open (docs/rules.md); the table is held while any is.
    open_alerts: list[Alert] = field(default_factory=list)
    alerts_raised: int = 0
    # BROKER_REFUSED: last time raised per topic (at most one per 60 s each).
    refused: dict[str, datetime] = field(default_factory=dict)
    devices: dict[DeviceName, DeviceState] = field(
        default_factory=lambda: {name: DeviceState() for name in DEVICE_NAMES}
    )
    # docs/rules.md: a sensor board back while wagers are in action counts as back
    # once its first complete snapshot has been compared with them.
    sensors_check_due: bool = False
    # The board has reported chip values (RFID): a snapshot without them is
    # missing something, not a presence-only board (docs/rules.md WAGER_UNVERIFIED).
    sensors_valued: bool = False
    # Answers given to console presses by press number, oldest first.
    answers: dict[int, Refusal | None] = field(default_factory=dict)
    # Presses at or below this number were forgotten (CONSOLE_MEMORY).
    answers_floor: int = 0
    # The highest press number answered.
    answers_top: int = 0
    stats: Stats = field(default_factory=Stats)
    # The input being handled: its time and the outputs so far.
    at: datetime = datetime.min
    out: list[Output] = field(default_factory=list)

    @property
    def held(self) -> bool:
        """A critical alert is open: nothing is settled until it is resolved."""
        return bool(self.open_alerts)

    def emit(self, type_: EventType, data: dict[str, Any], *, table_level: bool = False) -> None:
        self.seq += 1
        round_id = None if table_level else self.round_id
        self.out.append(Event(self.seq, type_, round_id, self.at, data))
