"""The game's words and the small immutable values every part of the engine shares.

Phases, roles, outcomes and alert codes as enums; a card taken (``CardSlot``),
a wager's amount (``Wager``), an alert, a sensor snapshot (``Spots``) and a
device's condition as frozen values; the table's setup.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final, NamedTuple

from table_controller.engine.errors import RulesError
from table_controller.engine.inputs import DeviceName
from table_controller.engine.rules import BOARD_POSITIONS, Limits, RulesProfile

SPOTS_PER_POSITION: Final = 3
NO_LIMITS: Final = Limits()


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


# Spot numbers on the board (docs/devices.md): bit = (position - 1) * 3 + spot.
SPOT_INITIAL: Final = 0
SPOT_TIE: Final = 1
SPOT_WAR: Final = 2
SPOT_NAMES: Final[tuple[SpotKind, ...]] = (SpotKind.INITIAL, SpotKind.TIE, SpotKind.WAR)
# The initial spot of every position on the board: bits 0, 3, 6, ...
INITIAL_SPOTS: Final = sum(1 << (SPOTS_PER_POSITION * i) for i in range(BOARD_POSITIONS))


def spot_bit(position: int, spot: int) -> int:
    return (position - 1) * SPOTS_PER_POSITION + spot


def set_bits(mask: int) -> Iterator[int]:
    """The numbers of the bits set in ``mask``, lowest first."""
    if mask < 0:
        # An infinite set of bits: say so rather than never return.
        raise ValueError(f"a negative bit mask: {mask}")
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Role(StrEnum):
    BURN = "burn"
    POSITION = "position"
    DEALER = "dealer"
    WAR_BURN = "war_burn"
    WAR_POSITION = "war_position"
    WAR_DEALER = "war_dealer"


# §(h)(1): a burn card's rank is revealed to no one at the table.
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
    WAGER_UNVERIFIED = "WAGER_UNVERIFIED"
    SHOE_FAULT = "SHOE_FAULT"
    NO_MORE_BETS_MISSING = "NO_MORE_BETS_MISSING"
    # Raised by the service, not the engine (docs/rules.md, docs/feed.md).
    JOURNAL_FAULT = "JOURNAL_FAULT"
    REPLAY_UNAVAILABLE = "REPLAY_UNAVAILABLE"
    IDENTITY_CONFLICT = "IDENTITY_CONFLICT"


class ResolvedBy(StrEnum):
    CONFIRM = "CONFIRM"
    CARD = "CARD"
    VOID_ROUND = "VOID_ROUND"
    DEVICE_ONLINE = "DEVICE_ONLINE"
    # docs/rules.md: a WAGER_UNVERIFIED resolves itself when a snapshot shows the latched amount.
    SNAPSHOT = "SNAPSHOT"
    JOURNAL = "JOURNAL"  # the service's JOURNAL_FAULT (docs/rules.md)


class LatchedBy(StrEnum):
    """How the wagers were latched (§(h)(2), or the first card of the deal)."""

    NO_MORE_BETS = "no_more_bets"
    FIRST_CARD = "first_card"


@dataclass(frozen=True, slots=True)
class TableSetup:
    """What a table is: its rules profile, shoe size, positions, limits and overrides.

    ``overrides`` are the config's changes to the named profile as (dotted key,
    value) pairs; the round records list them (``rules_overrides``).
    """

    rules: RulesProfile
    decks: int
    positions: int
    limits: Limits = NO_LIMITS
    overrides: tuple[tuple[str, str | int | bool], ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.decks <= 8:
            raise RulesError("decks", f"{self.decks} outside 1..8")
        if not 1 <= self.positions <= BOARD_POSITIONS:
            raise RulesError("positions", f"{self.positions} outside 1..{BOARD_POSITIONS}")


class CardSlot(NamedTuple):
    """One card taken in the round, in read order.

    ``card`` is None while a misread waits for the dealer's ``CARD`` (``pending``)
    and for a misread burn card, whose rank nobody may see (§(h)(1)).
    """

    n: int
    card: str | None
    role: Role
    position: int | None
    source: Source = Source.SHOE
    pending: bool = False


class Wager(NamedTuple):
    """A wager in action: ``amount`` in cents, None on a presence-only board."""

    amount: int | None


class Spots(NamedTuple):
    """The last snapshot of the bet sensor board.

    ``values`` lists (bit, cents) of the occupied spots whose value the board
    reported, sorted by bit; None from a presence-only board.
    """

    present: int = 0
    fault: int = 0
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
    spot: SpotKind | None = None
    n: int | None = None  # the read a MISREAD waits on
    device: DeviceName | None = None


class DeviceState(NamedTuple):
    online: bool = False
    seen: bool = False  # has been online at least once
    detail: str | None = None  # why it is offline
    status: str = "OK"  # the shoe's own state from its heartbeat


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
