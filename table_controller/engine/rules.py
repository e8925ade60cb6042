"""Rules profiles: the three rule sets the table can run, as validated data.

A profile is data, not a code path: the engine and the odds tool read every
number from here. Sources (``../shared/seeds/``):

- ``ny``: 9 NYCRR §5324.22 (cited as §(x)(n)).
- ``uk``: the UK Casino War rules outline.
- ``standard``: the player guide.
"""

from __future__ import annotations

from enum import StrEnum
from fractions import Fraction
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RulesName(StrEnum):
    NY = "ny"
    UK = "uk"
    STANDARD = "standard"


WagerResult = Literal["win", "lose", "push"]


class WagerSettlement(BaseModel):
    """How one wager settles: its result, net per unit wagered and the odds paid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    result: WagerResult
    net_per_unit: Fraction
    odds: str = Field(pattern=r"^\d+:\d+$")


class WarSettlement(BaseModel):
    """The initial and war wager of a position that went to war, for one war outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    initial: WagerSettlement
    war: WagerSettlement


class WarAccounting(BaseModel):
    """Settlement of a war deal by the player's war card against the dealer's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    win: WarSettlement
    tie: WarSettlement
    lose: WarSettlement
    # §(i)(5): under ny the dealer collects the whole initial wager when the
    # player goes to war, so it counts as settled at the decision.
    initial_collected_at_war_decision: bool


class RulesProfile(BaseModel):
    """One rule set. A table config names one and may override its fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: RulesName
    source: str
    decks_min: int = Field(ge=1, le=8)
    decks_max: int = Field(ge=1, le=8)
    decks_default: int = Field(ge=1, le=8)
    positions_max: int = Field(ge=1, le=10)
    initial_odds: int = Field(default=1, ge=1)
    tie_odds: int = Field(ge=1)
    # §(i)(5): "offer any player who has elected to go to war the opportunity
    # to place a tie wager on the war deal" (ny only).
    war_tie_wager_allowed: bool
    # §(i)(3)(i): the player surrenders one-half of the initial wager.
    surrender_loss: Fraction = Fraction(1, 2)
    war: WarAccounting
    # §(h)(1): one burn card before the first round of a shoe and for a new dealer.
    burn_new_shoe: int = Field(default=1, ge=0, le=10)
    # §(i)(5)(i): three burn cards before the war deal.
    burn_before_war: int = Field(default=3, ge=0, le=10)
    # Some jurisdictions burn again before the dealer's war card.
    burn_before_dealer_war: int = Field(default=0, ge=0, le=10)

    @model_validator(mode="after")
    def _decks_in_range(self) -> RulesProfile:
        if not self.decks_min <= self.decks_default <= self.decks_max:
            raise ValueError(
                f"decks_default {self.decks_default} outside {self.decks_min}..{self.decks_max}"
            )
        return self


def _s(result: WagerResult, npu: int | Fraction, odds: str) -> WagerSettlement:
    return WagerSettlement(result=result, net_per_unit=Fraction(npu), odds=odds)


NY = RulesProfile(
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

UK = RulesProfile(
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

STANDARD = RulesProfile(
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

PROFILES: dict[RulesName, RulesProfile] = {p.name: p for p in (NY, UK, STANDARD)}


def profile(name: str | RulesName) -> RulesProfile:
    """The shipped profile called ``name``; a ValueError naming the choices otherwise."""
    try:
        return PROFILES[RulesName(name)]
    except ValueError:
        choices = ", ".join(n.value for n in RulesName)
        raise ValueError(f"unknown rules {name!r}: choose one of {choices}") from None


Range = tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]]


class Limits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    """Table limits in cents, inclusive. The war wager uses the initial limits."""

    initial: Range | None = None
    tie: Range | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Limits:
        for name in ("initial", "tie"):
            pair = getattr(self, name)
            if pair is not None and pair[0] > pair[1]:
                raise ValueError(f"{name}: minimum {pair[0]} above maximum {pair[1]}")
        return self
