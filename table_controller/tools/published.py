"""Figures that sources print, kept as data and compared with the exact computation.

A figure that does not follow from its source's own written rule shows up as a
note (docs/rules.md: the UK outline's 2.33 % is the `standard` war-tie bonus) instead
of being repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from table_controller.engine.rules import (
    PROFILES,
    RulesName,
    RulesProfile,
    WagerSettlement,
    WarSettlement,
)
from table_controller.tools.odds import EdgeName, house_edges, war_net
from table_controller.tools.percent import format_percent


@dataclass(frozen=True, slots=True)
class PublishedFigure:
    """A house edge a source prints for a profile: ``percent`` of ``edge`` at ``decks``."""

    rules: RulesName
    decks: int
    edge: EdgeName
    percent: Decimal
    source: str
    text: str


PUBLISHED: tuple[PublishedFigure, ...] = (
    PublishedFigure(
        rules=RulesName.UK,
        decks=6,
        edge="edge_war",
        percent=Decimal("2.33"),
        source="UK Casino War rules outline",
        text="Main game 2.33% - when six decks used",
    ),
    PublishedFigure(
        rules=RulesName.UK,
        decks=6,
        edge="edge_tie",
        percent=Decimal("18.65"),
        source="UK Casino War rules outline",
        text="Tie Bet 18.65% - when six decks used",
    ),
)


@dataclass(frozen=True, slots=True)
class FigureCheck:
    """A published figure against the computation at the figure's own precision."""

    figure: PublishedFigure
    computed: Fraction
    agrees: bool
    # Where the figure disagrees: the other profiles whose edge rounds to it.
    matches: tuple[RulesName, ...]


def _rounds_to(value: Fraction, figure: Decimal) -> bool:
    exponent = figure.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    return round(value * 100, places) == Fraction(figure)


def check_published(
    rules: RulesProfile, decks: int, figures: tuple[PublishedFigure, ...] = PUBLISHED
) -> list[FigureCheck]:
    """Compare every figure published for ``rules`` at ``decks`` with the computation."""
    edges = house_edges(rules, decks)
    checks: list[FigureCheck] = []
    for fig in figures:
        if fig.rules is not rules.name or fig.decks != decks:
            continue
        computed = edges.edge(fig.edge)
        if computed is None:
            continue
        agrees = _rounds_to(computed, fig.percent)
        matches = tuple(
            other.name
            for other in PROFILES.values()
            if not agrees
            and other.name is not rules.name
            and (value := house_edges(other, decks).edge(fig.edge)) is not None
            and _rounds_to(value, fig.percent)
        )
        checks.append(FigureCheck(fig, computed, agrees, matches))
    return checks


WarOutcome = Literal["win", "tie", "lose"]
WAR_OUTCOMES: tuple[WarOutcome, ...] = ("win", "tie", "lose")
_WAR_OUTCOME_WORDS: dict[WarOutcome, str] = {"win": "won", "tie": "tied", "lose": "lost"}


def _signed(value: Fraction) -> str:
    text = str(value) if value.denominator != 1 else str(value.numerator)
    return f"+{text}" if value > 0 else text


def _wager_words(name: str, s: WagerSettlement) -> str:
    if s.result == "push":
        return f"{name} stands off"
    if s.result == "win":
        return f"{name} wins {s.odds}"
    return f"{name} loses"


def describe_war_accounting(
    rules: RulesProfile, outcomes: tuple[WarOutcome, ...] = WAR_OUTCOMES
) -> str:
    """The profile's war accounting for ``outcomes`` in words, from its data."""
    parts = []
    for outcome in outcomes:
        s: WarSettlement = getattr(rules.war, outcome)
        parts.append(
            f"war {_WAR_OUTCOME_WORDS[outcome]}: {_wager_words('initial', s.initial)}, "
            f"{_wager_words('war wager', s.war)}, net {_signed(war_net(s))} per unit"
        )
    return "; ".join(parts)


def _differing_outcomes(a: RulesProfile, b: RulesProfile) -> tuple[WarOutcome, ...]:
    """The war outcomes that ``a`` and ``b`` settle differently (all when none differ)."""
    differ = tuple(o for o in WAR_OUTCOMES if getattr(a.war, o) != getattr(b.war, o))
    return differ or WAR_OUTCOMES


EDGE_WORDS: dict[EdgeName, str] = {
    "edge_war": "main wager, always going to war",
    "edge_surrender": "main wager, always surrendering",
    "edge_tie": "tie wager",
    "edge_war_tie": "tie wager on the war deal",
}


def note_for(check: FigureCheck, rules: RulesProfile) -> str | None:
    """A sentence for a published figure that its source's written rule does not give."""
    if check.agrees:
        return None
    fig = check.figure
    shown: tuple[WarOutcome, ...] = WAR_OUTCOMES
    if check.matches:
        shown = _differing_outcomes(rules, PROFILES[check.matches[0]])
    text = (
        f"{fig.source} states {fig.percent} % for the {EDGE_WORDS[fig.edge]} with "
        f'{fig.decks} decks ("{fig.text}"), but its written rule '
        f"({describe_war_accounting(rules, shown)}) gives {format_percent(check.computed)} %"
    )
    others = []
    for name in check.matches:
        other = PROFILES[name]
        value = house_edges(other, fig.decks).edge(fig.edge)
        assert value is not None  # matches lists only profiles with a value
        others.append(
            f"the `{name.value}` profile's {format_percent(value)} % "
            f"({describe_war_accounting(other, _differing_outcomes(rules, other))})"
        )
    if others:
        text += f"; {fig.percent} % is " + " or ".join(others)
    return text + "."
