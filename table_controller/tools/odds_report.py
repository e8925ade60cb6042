"""What ``table-controller odds`` prints: the exact figures, as text or one JSON object,
and a seeded simulation through the engine beside them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from table_controller.engine.rules import RulesProfile
from table_controller.tools.odds import EDGE_NAMES, EdgeName, HouseEdges, house_edges, shoe_counts
from table_controller.tools.percent import PERCENT_DECIMALS, format_percent, percent
from table_controller.tools.published import (
    EDGE_WORDS,
    check_published,
    describe_war_accounting,
    note_for,
)

EDGE_BASIS: dict[str, str] = {
    "edge_war": "per unit of initial wager; the war wager is extra money, not in the base",
    "edge_surrender": "per unit of initial wager",
    "edge_tie": "per unit of tie wager",
    "edge_war_tie": "per unit of the tie wager on the war deal, given the position went to war",
}


SD_DECIMALS = 6


def _figure(value: Fraction | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"percent": percent(value), "fraction": str(value)}


def _wager(edges: HouseEdges, name: EdgeName) -> dict[str, Any] | None:
    """An edge with its exact variance and the standard deviation per unit."""
    wager = edges.wagers[name]
    if wager is None:
        return None
    return {
        "percent": percent(-wager.mean),
        "fraction": str(-wager.mean),
        "variance": {
            "fraction": str(wager.variance),
            "value": round(float(wager.variance), SD_DECIMALS),
        },
        "sd": round(wager.sd, SD_DECIMALS),
    }


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
        **{name: _wager(edges, name) for name in EDGE_NAMES},
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
        label = EDGE_WORDS[name]
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
    lines.append("")
    lines += _spread_lines(edges)
    for check in check_published(rules, decks):
        note = note_for(check, rules)
        if note is not None:
            lines.append(f"note: {note}")
    return "\n".join(lines)


def _spread_lines(edges: HouseEdges) -> list[str]:
    """The exact variance and the standard deviation per unit of each wager offered."""
    rows = [("", "variance (exact)", "sd/unit")]
    for name in EDGE_NAMES:
        wager = edges.wagers[name]
        if wager is not None:
            rows.append((EDGE_WORDS[name], str(wager.variance), f"{wager.sd:.{SD_DECIMALS}f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}" for a, b, c in rows]


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
    exact_sd: float  # per unit, from the exact variance
    rounds: int

    @property
    def measured_sd(self) -> float:
        """The spread of one round's net per unit, measured: one position, one unit a round."""
        return self.stderr * math.sqrt(self.rounds)

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
    main = edges.offered("edge_war" if policy == "war" else "edge_surrender")
    tie = edges.offered("edge_tie")
    n = int(result.rounds)
    return SimulationCheck(
        rounds=n,
        seed=seed,
        policy=policy,
        units_wagered=float(result.units_wagered),
        net_units=float(result.net_units),
        main=Measured(-main.mean, float(result.edge), float(result.stderr), main.sd, n),
        tie=Measured(
            -tie.mean, float(result.tie_bet_edge), float(result.tie_bet_stderr), tie.sd, n
        ),
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
        "exact_sd": round(m.exact_sd, SD_DECIMALS),
        "measured_sd": round(m.measured_sd, SD_DECIMALS) if math.isfinite(m.stderr) else None,
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
    head = ("", "exact %", "measured %", "± stderr %", "z", "sd exact", "sd measured")
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
                f"{m.exact_sd:.4f}",
                f"{m.measured_sd:.4f}" if math.isfinite(m.stderr) else "-",
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
