"""Rules profiles: the three rule sets the table can run, as plain frozen data.

A profile is data, not a code path: the engine and the odds tool read every
number from here. The config validates a table's profile and overrides at the
edge (``service/config.py``) and builds these; they check their own ranges,
raising ``RulesError`` naming the field; what each source lets a table override is
checked by ``check_rule_set`` (``bounds``). Sources:

- ``ny``: 9 NYCRR §5324.22 (cited as §(x)(n)).
- ``uk``: the UK Casino War rules outline.
- ``standard``: the player guide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Final, Literal

from table_controller.engine.bounds import check_rule_set as check_rule_set
from table_controller.engine.errors import RulesError


class RulesName(StrEnum):
    NY = "ny"
    UK = "uk"
    STANDARD = "standard"


WagerResult = Literal["win", "lose", "push"]
_ODDS: Final = re.compile(r"^\d+:\d+\Z")
# The sensor board numbers spots of up to ten positions (docs/devices.md).
BOARD_POSITIONS: Final = 10


@dataclass(frozen=True, slots=True)
class WagerSettlement:
    """How one wager settles: its result, net per unit wagered and the odds paid."""

    result: WagerResult
    net_per_unit: Fraction
    odds: str


@dataclass(frozen=True, slots=True)
class WarSettlement:
    """The initial and war wager of a position that went to war, for one war outcome."""

    initial: WagerSettlement
    war: WagerSettlement


@dataclass(frozen=True, slots=True)
class WarAccounting:
    """Settlement of a war deal by the player's war card against the dealer's."""

    win: WarSettlement
    tie: WarSettlement
    lose: WarSettlement
    # §(i)(5): under ny the dealer collects the whole initial wager when the
    # player goes to war, so it counts as settled at the decision.
    initial_collected_at_war_decision: bool


def _in_range(key: str, value: int, low: int, high: int | None = None) -> None:
    if value < low or (high is not None and value > high):
        span = f"{low}..{high}" if high is not None else f"at least {low}"
        raise RulesError(key, f"{value} outside {span}")


@dataclass(frozen=True, slots=True)
class RulesProfile:
    """One rule set. A table config names one and may override its fields."""

    name: RulesName
    source: str
    decks_min: int
    decks_max: int
    decks_default: int
    positions_max: int
    tie_odds: int
    # §(i)(5): "offer any player who has elected to go to war the opportunity
    # to place a tie wager on the war deal" (ny only).
    war_tie_wager_allowed: bool
    war: WarAccounting
    initial_odds: int = 1
    # §(i)(3)(i): the player surrenders one-half of the initial wager.
    surrender_loss: Fraction = Fraction(1, 2)
    # §(h)(1): one burn card before the first round of a shoe and for a new dealer.
    burn_new_shoe: int = 1
    # §(i)(5)(i): three burn cards before the war deal.
    burn_before_war: int = 3
    # Some jurisdictions burn again before the dealer's war card.
    burn_before_dealer_war: int = 0
    # §(h)(2): the dealer announces "no more bets" before dealing; a deal begun
    # without NO_MORE_BETS is a NO_MORE_BETS_MISSING warning (ny only).
    no_more_bets_required: bool = False

    def __post_init__(self) -> None:
        for key in ("decks_min", "decks_max", "decks_default"):
            _in_range(key, getattr(self, key), 1, 8)
        _in_range("positions_max", self.positions_max, 1, BOARD_POSITIONS)
        _in_range("initial_odds", self.initial_odds, 1)
        _in_range("tie_odds", self.tie_odds, 1)
        for key in ("burn_new_shoe", "burn_before_war", "burn_before_dealer_war"):
            _in_range(key, getattr(self, key), 0, 10)
        if not 0 <= self.surrender_loss <= 1:
            raise RulesError("surrender_loss", f"{self.surrender_loss} outside 0..1")
        if not self.decks_min <= self.decks_default <= self.decks_max:
            raise RulesError(
                "decks_default",
                f"{self.decks_default} outside {self.decks_min}..{self.decks_max}",
            )
        for outcome in ("win", "tie", "lose"):
            for wager in ("initial", "war"):
                odds = getattr(getattr(self.war, outcome), wager).odds
                if not _ODDS.match(odds):
                    raise RulesError(f"war.{outcome}.{wager}.odds", f"{odds!r} is not N:M")


def _s(result: WagerResult, npu: int | Fraction, odds: str) -> WagerSettlement:
    return WagerSettlement(result=result, net_per_unit=Fraction(npu), odds=odds)


NY: Final = RulesProfile(
    name=RulesName.NY,
    source="9 NYCRR §5324.22",
    # §(c): six, seven or eight decks.
    decks_min=6,
    decks_max=8,
    decks_default=6,
    # §(a): betting positions for no more than seven players.
    positions_max=7,
    # §(j)(2): a tie wager is paid at 10:1.
    tie_odds=10,
    war_tie_wager_allowed=True,
    no_more_bets_required=True,
    war=WarAccounting(
        # §(i)(5): the initial wager is collected when the player goes to war;
        # §(j)(3): the war wager pays 2:1, or 3:1 when the war deal ties, and
        # §(i)(5)(ii)(c): on a war tie the initial wager is returned.
        win=WarSettlement(initial=_s("lose", -1, "1:1"), war=_s("win", 2, "2:1")),
        tie=WarSettlement(initial=_s("push", 0, "1:1"), war=_s("win", 3, "3:1")),
        lose=WarSettlement(initial=_s("lose", -1, "1:1"), war=_s("lose", -1, "2:1")),
        initial_collected_at_war_decision=True,
    ),
)

UK: Final = RulesProfile(
    name=RulesName.UK,
    source="UK Casino War rules outline",
    # "normally played with six standard decks".
    decks_min=1,
    decks_max=8,
    decks_default=6,
    # A box is one position; up to three players may play on one box.
    positions_max=10,
    tie_odds=10,
    war_tie_wager_allowed=False,
    war=WarAccounting(
        # "higher or equal ... win even money on the Go to War wager only";
        # "lower ... lose both the Go to War wager and the original wager".
        win=WarSettlement(initial=_s("push", 0, "1:1"), war=_s("win", 1, "1:1")),
        tie=WarSettlement(initial=_s("push", 0, "1:1"), war=_s("win", 1, "1:1")),
        lose=WarSettlement(initial=_s("lose", -1, "1:1"), war=_s("lose", -1, "1:1")),
        initial_collected_at_war_decision=False,
    ),
)

STANDARD: Final = RulesProfile(
    name=RulesName.STANDARD,
    source="Casino War player guide",
    decks_min=1,
    decks_max=8,
    decks_default=6,
    positions_max=7,
    tie_odds=10,
    war_tie_wager_allowed=False,
    war=WarAccounting(
        # "higher ... paid 1 to 1 for your War Wager only; Initial Wager a stand-off";
        # "equal ... paid 1 to 1 for both"; "lower ... lose both".
        win=WarSettlement(initial=_s("push", 0, "1:1"), war=_s("win", 1, "1:1")),
        tie=WarSettlement(initial=_s("win", 1, "1:1"), war=_s("win", 1, "1:1")),
        lose=WarSettlement(initial=_s("lose", -1, "1:1"), war=_s("lose", -1, "1:1")),
        initial_collected_at_war_decision=False,
    ),
)

PROFILES: Final[dict[RulesName, RulesProfile]] = {p.name: p for p in (NY, UK, STANDARD)}


def profile(name: str | RulesName) -> RulesProfile:
    """The shipped profile called ``name``; a RulesError naming the choices otherwise."""
    try:
        return PROFILES[RulesName(name)]
    except ValueError:
        choices = ", ".join(n.value for n in RulesName)
        raise RulesError(
            "table.rules", f"unknown rules {name!r}: choose one of {choices}"
        ) from None


@dataclass(frozen=True, slots=True)
class Limits:
    """Table limits in cents, inclusive. The war wager uses the initial limits."""

    initial: tuple[int, int] | None = None
    tie: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("initial", "tie"):
            pair = getattr(self, name)
            if pair is None:
                continue
            if pair[0] < 0:
                raise RulesError(name, f"minimum {pair[0]} below 0")
            if pair[0] > pair[1]:
                raise RulesError(name, f"minimum {pair[0]} above maximum {pair[1]}")
