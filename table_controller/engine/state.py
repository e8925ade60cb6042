"""The whole table as one immutable value.

Everything the table knows is here (GAME.md, last paragraph): the shoe (id,
composition, cover seen, burn due), the dealer, the round in progress, open
alerts, the last read number and the answers given to console presses. The
engine derives a new value from the old one and an input, so replaying the
journal of inputs rebuilds the table exactly.

The parts of the state are typed named tuples, not frozen dataclasses: the
engine builds several of them for every input, and a frozen dataclass pays a
guarded ``object.__setattr__`` per field where a tuple is made in one step.
They stay immutable, hashable and equal by value.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final, NamedTuple

from table_controller.engine.inputs import DEVICE_NAMES, DeviceName
from table_controller.engine.rules import Limits, RulesProfile

# The sensor board numbers spots of up to ten positions (DEVICES.md).
BOARD_POSITIONS: Final = 10
SPOTS_PER_POSITION: Final = 3
# How many console answers are remembered for repeated presses. The console
# re-sends only presses it has not seen answered, so a short memory suffices.
CONSOLE_MEMORY: Final = 64
NO_LIMITS: Final = Limits()
# A shoe holds at most 8 copies of a card; counting stops at a byte's worth.
COPIES_MAX: Final = 255


class Phase(StrEnum):
    SHUFFLE_DUE = "shuffle_due"
    BETTING = "betting"
    DEALING = "dealing"
    TIE_DECISION = "tie_decision"
    WAR_DEALING = "war_dealing"


class SpotKind(StrEnum):
    """The four wagers of a position; ``war_tie`` sits on the tie spot (§(i)(5))."""

    INITIAL = "initial"
    TIE = "tie"
    WAR = "war"
    WAR_TIE = "war_tie"


# Spot numbers on the board (DEVICES.md): bit = (position - 1) * 3 + spot.
SPOT_INITIAL: Final = 0
SPOT_TIE: Final = 1
SPOT_WAR: Final = 2
SPOT_NAMES: Final[tuple[SpotKind, ...]] = (SpotKind.INITIAL, SpotKind.TIE, SpotKind.WAR)


def spot_bit(position: int, spot: int) -> int:
    return (position - 1) * SPOTS_PER_POSITION + spot


class Role(StrEnum):
    BURN = "burn"
    POSITION = "position"
    DEALER = "dealer"
    WAR_BURN = "war_burn"
    WAR_POSITION = "war_position"
    WAR_DEALER = "war_dealer"


BURN_ROLES: Final = frozenset({Role.BURN, Role.WAR_BURN})


class Source(StrEnum):
    SHOE = "shoe"
    MANUAL = "manual"


class Outcome(StrEnum):
    WIN = "win"
    LOSE = "lose"
    TIE = "tie"


class Decision(StrEnum):
    SURRENDER = "surrender"
    WAR = "war"


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


class AlertCode(StrEnum):
    PAST_POSTING = "PAST_POSTING"
    WAGER_REMOVED = "WAGER_REMOVED"
    LATE_WAGER = "LATE_WAGER"
    FOREIGN_CARD = "FOREIGN_CARD"
    MISREAD = "MISREAD"
    SHOE_READ_GAP = "SHOE_READ_GAP"
    UNEXPECTED_CARD = "UNEXPECTED_CARD"
    DEVICE_OFFLINE = "DEVICE_OFFLINE"
    DEVICE_ONLINE = "DEVICE_ONLINE"
    SENSOR_FAULT = "SENSOR_FAULT"
    WAR_WAGER_MISMATCH = "WAR_WAGER_MISMATCH"
    WAGER_OUT_OF_LIMITS = "WAGER_OUT_OF_LIMITS"
    BROKER_REFUSED = "BROKER_REFUSED"
    # Raised by the service, not the engine (GAME.md, MQTT.md).
    JOURNAL_FAULT = "JOURNAL_FAULT"
    REPLAY_UNAVAILABLE = "REPLAY_UNAVAILABLE"
    IDENTITY_CONFLICT = "IDENTITY_CONFLICT"


class ResolvedBy(StrEnum):
    CONFIRM = "CONFIRM"
    CARD = "CARD"
    VOID_ROUND = "VOID_ROUND"
    DEVICE_ONLINE = "DEVICE_ONLINE"
    JOURNAL = "JOURNAL"  # the service's JOURNAL_FAULT (GAME.md)


@dataclass(frozen=True, slots=True)
class TableSetup:
    """What a table is: its rules profile, shoe size, positions and limits."""

    rules: RulesProfile
    decks: int
    positions: int
    limits: Limits = NO_LIMITS

    def __post_init__(self) -> None:
        if not 1 <= self.decks <= 8:
            raise ValueError(f"decks: {self.decks} outside 1..8")
        if not 1 <= self.positions <= BOARD_POSITIONS:
            raise ValueError(f"positions: {self.positions} outside 1..{BOARD_POSITIONS}")


class ShoeState(NamedTuple):
    """The shoe in play (``id`` None before the first ``SHUFFLED``)."""

    number: int = 0
    id: str | None = None
    # Copies read of each card of ``cards.DECK`` in this shoe (FOREIGN_CARD),
    # packed one byte per card into an int (``copies_read``): one addition per
    # card read instead of a new 52-tuple.
    counts: int = 0
    # Every read taken from this shoe: cards, misreads, burns (not the cover).
    cards_read: int = 0
    cover_seen: bool = False
    cover_n: int | None = None
    # §(h)(1): cards still to burn before the next deal; a flag in effect, set
    # (never added to) by a new shoe or a new dealer.
    burns_due: int = 0


def copies_read(counts: int, index: int) -> int:
    """How many copies of card ``index`` (of ``cards.DECK``) ``ShoeState.counts`` holds."""
    return (counts >> (8 * index)) & COPIES_MAX


def count_copy(counts: int, index: int) -> int:
    """``counts`` with one more copy of card ``index`` (saturating at COPIES_MAX)."""
    if (counts >> (8 * index)) & COPIES_MAX == COPIES_MAX:
        return counts
    return counts + (1 << (8 * index))


class CardSlot(NamedTuple):
    """One card taken in the round, in read order.

    ``card`` is None while a misread waits for the dealer's ``CARD`` (``pending``)
    and for a misread burn card, whose rank nobody may see (§(h)(1)).
    """

    n: int
    card: str | None
    role: Role
    position: int | None
    source: Source
    pending: bool = False


class Wager(NamedTuple):
    """A wager in action: ``amount`` in cents, None on a presence-only board."""

    amount: int | None


class Hand(NamedTuple):
    """A playing position of the round (its initial spot held chips at the latch)."""

    position: int
    initial: Wager
    tie: Wager | None = None
    war: Wager | None = None
    war_tie: Wager | None = None
    outcome: Outcome | None = None
    decision: Decision | None = None
    war_outcome: Outcome | None = None


class RoundState(NamedTuple):
    """The round open for betting or in progress."""

    latched: bool = False
    latched_by: str | None = None
    started: datetime | None = None
    hands: tuple[Hand, ...] = ()
    # §(h)(3)(iii): tie wagers of positions without an initial wager: void.
    void_ties: tuple[tuple[int, int | None], ...] = ()
    cards: tuple[CardSlot, ...] = ()
    # The cards still expected, in order: (role, position).
    plan: tuple[tuple[Role, int | None], ...] = ()
    plan_i: int = 0
    deal_started: bool = False
    original_settled: bool = False
    alert_ids: tuple[str, ...] = ()
    # Cards read when none was due (UNEXPECTED_CARD), set aside: (n, card).
    discards: tuple[tuple[int, str | None], ...] = ()
    # Spots already warned as LATE_WAGER this round (bits).
    late_warned: frozenset[int] = frozenset()

    def hand(self, position: int) -> Hand | None:
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

    @property
    def deal_complete(self) -> bool:
        return self.latched and self.plan_i >= len(self.plan)


class Spots(NamedTuple):
    """The last snapshot of the bet sensor board."""

    present: int = 0
    fault: int = 0
    # (bit, cents) for occupied spots, sorted by bit; None: presence-only board.
    values: tuple[tuple[int, int], ...] | None = None

    def faulty(self, bit: int) -> bool:
        """The board flags this spot's sensor as faulty."""
        return bool((self.fault >> bit) & 1)

    def value(self, bit: int) -> int | None:
        if self.values is None or not (self.present >> bit) & 1:
            return None
        for b, cents in self.values:
            if b == bit:
                return cents
        return None


class Alert(NamedTuple):
    alert: str
    code: AlertCode
    severity: Severity
    message: str
    round_id: int | None
    position: int | None = None
    spot: str | None = None
    n: int | None = None  # the read a MISREAD waits on
    device: DeviceName | None = None


class AlertBook(NamedTuple):
    # Only critical alerts stay open (GAME.md); the table is held while any is.
    open: tuple[Alert, ...] = ()
    raised: int = 0
    # BROKER_REFUSED: last time raised per topic (at most one per 60 s each).
    refused: tuple[tuple[str, datetime], ...] = ()


class DeviceState(NamedTuple):
    online: bool = False
    seen: bool = False  # has been online at least once
    detail: str | None = None  # why it is offline
    status: str = "OK"  # the shoe's own state from its heartbeat


class ConsoleBook(NamedTuple):
    """Answers given to console presses, so a repeated press gets the same answer."""

    answers: tuple[tuple[int, str | None], ...] = ()
    # Presses at or below this number were forgotten (CONSOLE_MEMORY).
    floor: int = 0
    # The highest press number answered.
    top: int = 0


class Stats(NamedTuple):
    rounds: int = 0
    ties: int = 0
    wars: int = 0
    surrenders: int = 0
    voids: int = 0
    alerts_by_code: tuple[tuple[str, int], ...] = ()
    # Cents wagered and won by the house on settled rounds; None once any amount was unknown.
    drop: int | None = 0
    win: int | None = 0
    first_started: datetime | None = None
    last_ended: datetime | None = None
    # Reads whose number was already taken (ignored) and cards set aside
    # unplayed (UNEXPECTED_CARD).
    duplicate_reads: int = 0
    discarded: int = 0


# Every device offline and never seen: the devices of a table just installed.
NO_DEVICES: Final[tuple[DeviceState, ...]] = tuple(DeviceState() for _ in DEVICE_NAMES)


class TableState(NamedTuple):
    setup: TableSetup
    seq: int = 0
    phase: Phase = Phase.SHUFFLE_DUE
    round_id: int = 1
    dealer: str | None = None
    last_read_n: int = 0
    shoe: ShoeState = ShoeState()
    round: RoundState = RoundState()
    spots: Spots = Spots()
    alerts: AlertBook = AlertBook()
    devices: tuple[DeviceState, ...] = NO_DEVICES
    console: ConsoleBook = ConsoleBook()
    stats: Stats = Stats()

    @property
    def held(self) -> bool:
        """A critical alert is open: nothing is settled until it is resolved."""
        return bool(self.alerts.open)

    def device(self, name: DeviceName) -> DeviceState:
        return self.devices[DEVICE_NAMES.index(name)]


def initial_state(setup: TableSetup) -> TableState:
    """A table just installed: no shoe yet (``shuffle_due``), devices offline."""
    return TableState(setup=setup)
