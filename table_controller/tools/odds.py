"""Exact house edges and variances of a rules profile: rational arithmetic only.

Everything is rational arithmetic (``fractions.Fraction``) over the finite shoe:
``decks`` × 52 cards, that is ``4 × decks`` copies of each of the 13 ranks
(§5324.22(c), (f): the suit has no effect on a card's rank). Every payout comes
from the profile's data (``table_controller.engine.rules``): the initial and tie odds,
the surrender loss and the war accounting table; no rule set is named in logic.

The figures are for ONE position playing from a freshly shuffled shoe:

- the main wager with the player always going to war, and always surrendering,
  per unit of INITIAL wager. Going to war puts up a war wager equal to the
  initial wager (docs/rules.md, "war wager amount"): that extra money is not in the
  base, so the edge is what the house keeps of every unit first put down;
- the tie wager, per unit of tie wager;
- the tie wager on the war deal (§(i)(5), only where the profile allows it),
  per unit of that wager, given the position went to war;
- P(tie) on the original deal and P(war tie) given a tie.

Each wager under each policy is a finite distribution of the player's net per
unit (:class:`NetDistribution`): its mean is minus the house edge, and its
variance (exact, a fraction) gives the standard deviation per unit that theo
and a hold interval need. The report and the command are in
:mod:`table_controller.tools.odds_report` and ``table_controller.cli.odds``.

Burn cards. A shuffled shoe is exchangeable: whatever cards have been seen, the
unseen ones are a uniformly random arrangement of the unseen multiset, so any
two unseen places in the shoe hold a uniform draw without replacement from it,
however many unseen cards lie before them. A burn card is never shown to
anyone (§(h)(1)) and nothing depends on its rank, so burning it only moves the
player's and the dealer's cards one place further along the same exchangeable
sequence: the one before the first round (§(h)(1)), the three before the war
deal (§(i)(5)(i)) and any burn before the dealer's war card change no
probability. The two tied cards of the original deal are seen, though, and
stay on the layout (§(i)(5)): the war deal is drawn from the shoe without them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from table_controller.engine.rules import RulesName, RulesProfile, WarSettlement

# §5324.22(f): ace high down to 2; §(c): each deck of 52 cards, four suits.
RANKS: tuple[str, ...] = ("2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
SUITS_PER_DECK = 4

EdgeName = Literal["edge_war", "edge_surrender", "edge_tie", "edge_war_tie"]
EDGE_NAMES: tuple[EdgeName, ...] = ("edge_war", "edge_surrender", "edge_tie", "edge_war_tie")


@dataclass(frozen=True, slots=True)
class Outcomes:
    """Probabilities of the player's card against the dealer's: higher, equal, lower."""

    win: Fraction
    tie: Fraction
    lose: Fraction


@dataclass(frozen=True, slots=True)
class NetDistribution:
    """One wager under one policy: each (probability, player's net per unit) it can end in.

    Several entries may carry the same net; the probabilities sum to 1.
    """

    outcomes: tuple[tuple[Fraction, Fraction], ...]

    def __post_init__(self) -> None:
        if sum(p for p, _ in self.outcomes) != 1:
            raise ValueError("the probabilities of a wager's outcomes must sum to 1")

    @property
    def mean(self) -> Fraction:
        """The player's expected net per unit: minus the house edge."""
        return sum((p * net for p, net in self.outcomes), Fraction(0))

    @property
    def variance(self) -> Fraction:
        """E[(net − mean)²] per unit², exact."""
        mean = self.mean
        return sum((p * (net - mean) ** 2 for p, net in self.outcomes), Fraction(0))

    @property
    def sd(self) -> float:
        """The standard deviation per unit (a square root, so no longer a fraction)."""
        return math.sqrt(self.variance)


@dataclass(frozen=True, slots=True)
class HouseEdges:
    """Exact figures for one position of one profile with ``decks`` decks.

    Edges are the house's expected gain per unit: ``edge_war`` and
    ``edge_surrender`` per unit of initial wager (a war wager is extra money),
    ``edge_tie`` per unit of tie wager, ``edge_war_tie`` per unit of the tie
    wager on the war deal, or None where the profile does not offer it.
    ``wagers`` holds the distribution behind each edge (its variance too).
    """

    rules: RulesName
    decks: int
    original: Outcomes
    war: Outcomes
    wagers: Mapping[EdgeName, NetDistribution | None]

    @property
    def p_tie(self) -> Fraction:
        return self.original.tie

    @property
    def p_war_tie(self) -> Fraction:
        return self.war.tie

    def edge(self, name: EdgeName) -> Fraction | None:
        wager = self.wagers[name]
        return None if wager is None else -wager.mean

    def variance(self, name: EdgeName) -> Fraction | None:
        wager = self.wagers[name]
        return None if wager is None else wager.variance

    @property
    def edge_war(self) -> Fraction:
        return self._required("edge_war")

    @property
    def edge_surrender(self) -> Fraction:
        return self._required("edge_surrender")

    @property
    def edge_tie(self) -> Fraction:
        return self._required("edge_tie")

    @property
    def edge_war_tie(self) -> Fraction | None:
        return self.edge("edge_war_tie")

    def offered(self, name: EdgeName) -> NetDistribution:
        """The wager's distribution; ValueError where these rules do not offer it."""
        wager = self.wagers[name]
        if wager is None:
            raise ValueError(f"rules {self.rules.value!r} offer no {name.removeprefix('edge_')}")
        return wager

    def _required(self, name: EdgeName) -> Fraction:
        return -self.offered(name).mean


def shoe_counts(decks: int) -> tuple[int, ...]:
    """Copies of each rank in a full shoe of ``decks`` decks, in RANKS order."""
    if decks < 1:
        raise ValueError(f"decks must be at least 1, not {decks}")
    return tuple(SUITS_PER_DECK * decks for _ in RANKS)


def deal_outcomes(counts: tuple[int, ...]) -> Outcomes:
    """One card to the player, then one to the dealer, from a shoe holding ``counts``."""
    total = sum(counts)
    if total < 2:
        raise ValueError("a deal needs at least two cards in the shoe")
    pairs = total * (total - 1)
    tie = sum(c * (c - 1) for c in counts)
    below = 0  # cards ranked below the current rank
    win = 0
    for c in counts:
        win += c * below  # the player's card of this rank over a lower dealer card
        below += c
    lose = pairs - tie - win
    return Outcomes(Fraction(win, pairs), Fraction(tie, pairs), Fraction(lose, pairs))


def war_outcomes(counts: tuple[int, ...]) -> Outcomes:
    """The war deal given a tie on the original deal from a shoe holding ``counts``.

    The tie happened on some rank r with probability proportional to
    c_r·(c_r − 1); its two cards stay on the layout (§(i)(5)), so the war deal
    is drawn from the shoe less two cards of rank r. Burns change nothing (see
    the module docstring).
    """
    weights = [c * (c - 1) for c in counts]
    total_weight = sum(weights)
    if total_weight == 0:
        raise ValueError("no tie is possible with this shoe")
    win = tie = lose = Fraction(0)
    for rank, weight in enumerate(weights):
        if weight == 0:
            continue
        rest = tuple(c - 2 if i == rank else c for i, c in enumerate(counts))
        o = deal_outcomes(rest)
        w = Fraction(weight, total_weight)
        win += w * o.win
        tie += w * o.tie
        lose += w * o.lose
    return Outcomes(win, tie, lose)


def war_net(s: WarSettlement) -> Fraction:
    """Net per unit of initial wager: the war wager equals the initial (docs/rules.md)."""
    return s.initial.net_per_unit + s.war.net_per_unit


def _win_or_lose(p: Fraction, odds: Fraction | int) -> NetDistribution:
    """A wager that wins ``odds`` with probability ``p`` and otherwise loses its unit."""
    return NetDistribution(((p, Fraction(odds)), (1 - p, Fraction(-1))))


def wager_distributions(
    rules: RulesProfile, counts: tuple[int, ...]
) -> dict[EdgeName, NetDistribution | None]:
    """Every wager of ``rules`` at one position, dealt from a shoe holding ``counts``.

    ``counts`` are copies per rank, lowest rank first (a full shoe is
    :func:`shoe_counts`); a smaller shoe lets a test enumerate every deal.
    """
    original = deal_outcomes(counts)
    war = war_outcomes(counts)
    # §(i)(1)(i)/(ii): the initial wager loses one unit or wins at the initial odds.
    decided = ((original.win, Fraction(rules.initial_odds)), (original.lose, Fraction(-1)))
    # §(i)(5)(ii) and the profile's war accounting: per war outcome, initial + war.
    went_to_war = tuple(
        (original.tie * p, war_net(s))
        for p, s in ((war.win, rules.war.win), (war.tie, rules.war.tie), (war.lose, rules.war.lose))
    )
    # §(i)(3)(i): surrendering forfeits the profile's surrender loss.
    surrendered = ((original.tie, -Fraction(rules.surrender_loss)),)
    return {
        "edge_war": NetDistribution(decided + went_to_war),
        "edge_surrender": NetDistribution(decided + surrendered),
        # §(i)(1)(iii), §(j)(2): the tie wager wins at tie_odds on a tie, else loses.
        "edge_tie": _win_or_lose(original.tie, rules.tie_odds),
        # §(i)(5)(ii)(a)-(c): the tie wager on the war deal wins on an equal war card.
        "edge_war_tie": (
            _win_or_lose(war.tie, rules.tie_odds) if rules.war_tie_wager_allowed else None
        ),
    }


def house_edges(rules: RulesProfile, decks: int) -> HouseEdges:
    """Exact house edges and variances of ``rules`` at one position with ``decks`` decks.

    Pure arithmetic over the shoe: it does not enforce the profile's deck range
    (the command does), so a profile can be studied beyond it.
    """
    counts = shoe_counts(decks)
    return HouseEdges(
        rules=rules.name,
        decks=decks,
        original=deal_outcomes(counts),
        war=war_outcomes(counts),
        wagers=wager_distributions(rules, counts),
    )
