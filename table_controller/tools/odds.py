"""Exact house edges of a rules profile, and the ``table-controller odds`` command.

Everything is rational arithmetic (``fractions.Fraction``) over the finite shoe:
``decks`` × 52 cards, that is ``4 × decks`` copies of each of the 13 ranks
(§5324.22(c), (f): the suit has no effect on a card's rank). Every payout comes
from the profile's data (``table_controller.engine.rules``): the initial and tie odds,
the surrender loss and the war accounting table; no rule set is named in logic.

The figures are for ONE position playing from a freshly shuffled shoe:

- the main wager with the player always going to war, and always surrendering,
  per unit of INITIAL wager. Going to war puts up a war wager equal to the
  initial wager (GAME.md, "war wager amount"): that extra money is not in the
  base, so the edge is what the house keeps of every unit first put down;
- the tie wager, per unit of tie wager;
- the tie wager on the war deal (§(i)(5), only where the profile allows it),
  per unit of that wager, given the position went to war;
- P(tie) on the original deal and P(war tie) given a tie.

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

import argparse
import json
import math
import sys
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, TextIO

from table_controller.engine.rules import (
    PROFILES,
    RulesName,
    RulesProfile,
    WagerSettlement,
    WarSettlement,
    profile,
)

# §5324.22(f): ace high down to 2; §(c): each deck of 52 cards, four suits.
RANKS: tuple[str, ...] = ("2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A")
SUITS_PER_DECK = 4
PERCENT_DECIMALS = 4
_PERCENT_SCALE: int = 10**PERCENT_DECIMALS

EdgeName = Literal["edge_war", "edge_surrender", "edge_tie", "edge_war_tie"]
EDGE_NAMES: tuple[EdgeName, ...] = ("edge_war", "edge_surrender", "edge_tie", "edge_war_tie")


@dataclass(frozen=True, slots=True)
class Outcomes:
    """Probabilities of the player's card against the dealer's: higher, equal, lower."""

    win: Fraction
    tie: Fraction
    lose: Fraction


@dataclass(frozen=True, slots=True)
class HouseEdges:
    """Exact figures for one position of one profile with ``decks`` decks.

    Edges are the house's expected gain per unit: ``edge_war`` and
    ``edge_surrender`` per unit of initial wager (a war wager is extra money),
    ``edge_tie`` per unit of tie wager, ``edge_war_tie`` per unit of the tie
    wager on the war deal, or None where the profile does not offer it.
    """

    rules: RulesName
    decks: int
    original: Outcomes
    war: Outcomes
    edge_war: Fraction
    edge_surrender: Fraction
    edge_tie: Fraction
    edge_war_tie: Fraction | None

    @property
    def p_tie(self) -> Fraction:
        return self.original.tie

    @property
    def p_war_tie(self) -> Fraction:
        return self.war.tie

    def edge(self, name: EdgeName) -> Fraction | None:
        value: Fraction | None = getattr(self, name)
        return value


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


def _war_net(s: WarSettlement) -> Fraction:
    """Net per unit of initial wager: the war wager equals the initial (GAME.md)."""
    return s.initial.net_per_unit + s.war.net_per_unit


def house_edges(rules: RulesProfile, decks: int) -> HouseEdges:
    """Exact house edges of ``rules`` at one position with ``decks`` decks.

    Pure arithmetic over the shoe: it does not enforce the profile's deck range
    (the command does), so a profile can be studied beyond it.
    """
    counts = shoe_counts(decks)
    original = deal_outcomes(counts)
    war = war_outcomes(counts)
    # §(i)(1)(i)/(ii): the initial wager loses one unit or wins at the initial odds.
    decided = original.win * rules.initial_odds - original.lose
    # §(i)(5)(ii) and the profile's war accounting: per war outcome, initial + war.
    war_net = war.win * _war_net(rules.war.win) + war.tie * _war_net(rules.war.tie)
    war_net += war.lose * _war_net(rules.war.lose)
    player_war = decided + original.tie * war_net
    # §(i)(3)(i): surrendering forfeits the profile's surrender loss.
    player_surrender = decided - original.tie * rules.surrender_loss
    # §(i)(1)(iii), §(j)(2): the tie wager wins at tie_odds on a tie, else loses.
    player_tie = original.tie * rules.tie_odds - (1 - original.tie)
    edge_war_tie: Fraction | None = None
    if rules.war_tie_wager_allowed:
        # §(i)(5)(ii)(a)-(c): the tie wager on the war deal wins on an equal war card.
        edge_war_tie = -(war.tie * rules.tie_odds - (1 - war.tie))
    return HouseEdges(
        rules=rules.name,
        decks=decks,
        original=original,
        war=war,
        edge_war=-player_war,
        edge_surrender=-player_surrender,
        edge_tie=-player_tie,
        edge_war_tie=edge_war_tie,
    )


def _percent_units(value: Fraction) -> int:
    """``value`` in units of 10**-PERCENT_DECIMALS percent, rounded half to even."""
    return round(value * 100 * _PERCENT_SCALE)


def percent(value: Fraction) -> float:
    """``value`` as a percentage rounded to four decimals (half to even)."""
    return float(Fraction(_percent_units(value), _PERCENT_SCALE))


def format_percent(value: Fraction) -> str:
    """``value`` as a percentage with exactly four decimals, e.g. ``2.3301``."""
    units = _percent_units(value)
    whole, frac = divmod(abs(units), _PERCENT_SCALE)
    return f"{'-' if units < 0 else ''}{whole}.{frac:0{PERCENT_DECIMALS}d}"


# ---------------------------------------------------------------------------
# Published figures: what sources print, kept as data and compared with the
# computation, so a figure that does not follow from its source's own written
# rule shows up as a note instead of being repeated.


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
            f"{_wager_words('war wager', s.war)}, net {_signed(_war_net(s))} per unit"
        )
    return "; ".join(parts)


def _differing_outcomes(a: RulesProfile, b: RulesProfile) -> tuple[WarOutcome, ...]:
    """The war outcomes that ``a`` and ``b`` settle differently (all when none differ)."""
    differ = tuple(o for o in WAR_OUTCOMES if getattr(a.war, o) != getattr(b.war, o))
    return differ or WAR_OUTCOMES


_EDGE_WORDS: dict[EdgeName, str] = {
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
        f"{fig.source} states {fig.percent} % for the {_EDGE_WORDS[fig.edge]} with "
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


# ---------------------------------------------------------------------------
# Output.

EDGE_BASIS: dict[str, str] = {
    "edge_war": "per unit of initial wager; the war wager is extra money, not in the base",
    "edge_surrender": "per unit of initial wager",
    "edge_tie": "per unit of tie wager",
    "edge_war_tie": "per unit of the tie wager on the war deal, given the position went to war",
}


def _figure(value: Fraction | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"percent": percent(value), "fraction": str(value)}


def report(rules: RulesProfile, decks: int) -> dict[str, Any]:
    """The JSON-ready object printed by ``odds --json`` (keys in a fixed order)."""
    edges = house_edges(rules, decks)
    checks = check_published(rules, decks)
    notes = [n for c in checks if (n := note_for(c, rules)) is not None]
    return {
        "rules": rules.name.value,
        "source": rules.source,
        "decks": decks,
        "cards": sum(shoe_counts(decks)),
        "positions": 1,
        "tie_odds": f"{rules.tie_odds}:1",
        "war_accounting": describe_war_accounting(rules),
        "p_tie": _figure(edges.p_tie),
        "p_war_tie": _figure(edges.p_war_tie),
        "edge_war": _figure(edges.edge_war),
        "edge_surrender": _figure(edges.edge_surrender),
        "edge_tie": _figure(edges.edge_tie),
        "edge_war_tie": _figure(edges.edge_war_tie),
        "basis": EDGE_BASIS,
        "published": [
            {
                "source": c.figure.source,
                "text": c.figure.text,
                "edge": c.figure.edge,
                "decks": c.figure.decks,
                "percent": float(c.figure.percent),
                "computed_percent": percent(c.computed),
                "agrees": c.agrees,
                "matches": [n.value for n in c.matches],
            }
            for c in checks
        ],
        "notes": notes,
    }


def render_table(rules: RulesProfile, decks: int) -> str:
    """The human output: one line per figure, exact fraction and percent."""
    edges = house_edges(rules, decks)
    rows: list[tuple[str, str, str]] = [
        ("P(tie) on the original deal", str(edges.p_tie), format_percent(edges.p_tie)),
        ("P(war tie | tie)", str(edges.p_war_tie), format_percent(edges.p_war_tie)),
    ]
    for name in EDGE_NAMES:
        label = _EDGE_WORDS[name]
        if name in ("edge_tie", "edge_war_tie"):
            label += f" ({rules.tie_odds}:1)"
        value = edges.edge(name)
        if value is None:
            rows.append((label, "not offered by these rules", "-"))
        else:
            rows.append((label, str(value), format_percent(value)))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in [*rows, ("", "exact", "")])
    w2 = max(len(r[2]) for r in rows)
    lines = [
        f"rules {rules.name.value} ({rules.source}), {decks} deck{'s' if decks != 1 else ''} "
        f"({sum(shoe_counts(decks))} cards), one position",
        f"{'':<{w0}}  {'exact':<{w1}}  {'%':>{w2}}",
    ]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c:>{w2}}" for a, b, c in rows]
    lines.append("")
    lines.append(
        "Main-wager edges are per unit of initial wager: going to war adds a war wager "
        "equal to it, extra money not in the base."
    )
    lines.append(
        "Tie-wager edges are per unit of that wager; the war-deal tie wager "
        "given the position went to war."
    )
    for check in check_published(rules, decks):
        note = note_for(check, rules)
        if note is not None:
            lines.append(f"note: {note}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Simulation: rounds played through the real engine beside the exact figures.

Policy = Literal["war", "surrender"]
# How far into the shoe the cover card sits, as the engine's simulation takes it.
SIMULATION_PENETRATION = 0.75


@dataclass(frozen=True, slots=True)
class Measured:
    """A simulated edge beside the exact one (fractions of a unit, not percent)."""

    exact: Fraction
    measured: float
    stderr: float

    @property
    def z(self) -> float | None:
        """Standard errors between measured and exact; None without a finite, positive stderr."""
        if not 0 < self.stderr < math.inf:
            return None
        return (self.measured - float(self.exact)) / self.stderr


@dataclass(frozen=True, slots=True)
class SimulationCheck:
    rounds: int
    seed: int
    policy: Policy
    units_wagered: float
    net_units: float
    main: Measured
    tie: Measured


def simulate_check(
    rules: RulesProfile, decks: int, rounds: int, seed: int, policy: Policy
) -> SimulationCheck:
    """Play ``rounds`` seeded rounds at one position through the engine and compare.

    The exact figures are for a full, freshly shuffled shoe; the engine deals
    on to the cover card, so a long run agrees with them only within its
    standard error (and the tiny effect of dealing deeper into each shoe).
    """
    # Imported here: the exact figures need nothing of the engine.
    from table_controller.engine import simulate

    edges = house_edges(rules, decks)
    result = simulate(
        rules,
        decks,
        rounds,
        seed,
        positions=1,
        policy=policy,
        penetration=SIMULATION_PENETRATION,
    )
    exact_main = edges.edge_war if policy == "war" else edges.edge_surrender
    return SimulationCheck(
        rounds=int(result.rounds),
        seed=seed,
        policy=policy,
        units_wagered=float(result.units_wagered),
        net_units=float(result.net_units),
        main=Measured(exact_main, float(result.edge), float(result.stderr)),
        tie=Measured(edges.edge_tie, float(result.tie_bet_edge), float(result.tie_bet_stderr)),
    )


def _rounded_percent(value: float) -> float:
    return round(value * 100, PERCENT_DECIMALS)


def _measured_json(m: Measured) -> dict[str, Any]:
    z = m.z
    return {
        "exact_percent": percent(m.exact),
        "measured_percent": _rounded_percent(m.measured),
        # One round has no spread to measure: the engine reports an infinite stderr.
        "stderr_percent": _rounded_percent(m.stderr) if math.isfinite(m.stderr) else None,
        "z": None if z is None else round(z, 2),
    }


def _number(value: float) -> int | float:
    """Whole units as an int in JSON, so a count stays a count."""
    return int(value) if value.is_integer() else value


def simulation_json(check: SimulationCheck) -> dict[str, Any]:
    return {
        "rounds": check.rounds,
        "seed": check.seed,
        "policy": check.policy,
        "positions": 1,
        "penetration": SIMULATION_PENETRATION,
        "units_wagered": _number(check.units_wagered),
        "net_units": _number(check.net_units),
        f"edge_{check.policy}": _measured_json(check.main),
        "edge_tie": _measured_json(check.tie),
    }


def render_simulation(check: SimulationCheck) -> str:
    rows = [
        (
            f"main wager, always {'going to war' if check.policy == 'war' else 'surrendering'}",
            check.main,
        ),
        ("tie wager", check.tie),
    ]
    head = ("", "exact %", "measured %", "± stderr %", "z")
    cells = [head]
    for label, m in rows:
        z = m.z
        cells.append(
            (
                label,
                format_percent(m.exact),
                f"{m.measured * 100:.{PERCENT_DECIMALS}f}",
                f"{m.stderr * 100:.{PERCENT_DECIMALS}f}",
                "-" if z is None else f"{z:+.2f}",
            )
        )
    widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
    lines = [
        f"simulated {check.rounds} rounds through the engine (seed {check.seed}, one position, "
        f"cover card at {SIMULATION_PENETRATION:.0%} of the shoe)"
    ]
    for row in cells:
        first = f"{row[0]:<{widths[0]}}"
        rest = "  ".join(f"{c:>{w}}" for c, w in zip(row[1:], widths[1:], strict=True))
        lines.append(f"{first}  {rest}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The command.


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules",
        required=True,
        choices=[n.value for n in RulesName],
        help="rules profile",
    )
    parser.add_argument(
        "--decks", type=int, default=None, help="decks in the shoe (default: the profile's)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--simulate",
        type=int,
        default=None,
        metavar="ROUNDS",
        help="also play ROUNDS rounds through the engine and show the measured edge",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the simulated shuffles (default 0)"
    )
    parser.add_argument(
        "--policy",
        choices=["war", "surrender"],
        default="war",
        help="the simulated player's choice on every tie (default war)",
    )


def deck_error(rules: RulesProfile, decks: int) -> str | None:
    """Why ``decks`` is refused for ``rules``, or None when it is allowed."""
    if rules.decks_min <= decks <= rules.decks_max:
        return None
    return (
        f"{decks} decks not allowed by rules {rules.name.value!r} ({rules.source}): "
        f"choose --decks {rules.decks_min}..{rules.decks_max}"
    )


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    rules = profile(args.rules)
    decks: int = rules.decks_default if args.decks is None else args.decks
    problem = deck_error(rules, decks)
    if problem is None and args.simulate is not None and args.simulate < 1:
        problem = f"--simulate needs at least 1 round, not {args.simulate}"
    if problem is not None:
        print(f"table-controller odds: error: {problem}", file=err)
        return 2
    check = None
    if args.simulate is not None:
        check = simulate_check(rules, decks, args.simulate, args.seed, args.policy)
    if args.json:
        body = report(rules, decks)
        body["simulation"] = None if check is None else simulation_json(check)
        print(json.dumps(body, indent=2, ensure_ascii=False), file=out)
    else:
        print(render_table(rules, decks), file=out)
        if check is not None:
            print("", file=out)
            print(render_simulation(check), file=out)
    return 0
