"""``table-controller odds --rules R [--decks N] [--json] [--simulate ROUNDS]``.

The exact house edge, variance and standard deviation per unit of every wager of a
rules profile (``tools.odds``), optionally beside a seeded simulation through the
engine (``tools.odds_report``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from table_controller.engine.rules import RulesName, RulesProfile, profile
from table_controller.tools.odds_report import (
    render_simulation,
    render_table,
    report,
    simulate_check,
    simulation_json,
)


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
