"""What the headless demo prints: amounts, one line per round, the summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from table_controller.rigs.tally import RoundPlayed, Tally
from table_controller.tools.history import money as amount


def money(cents: int | None) -> str:
    """Signed dollars and cents (``+$25.00``, ``-$12.50``); ``--`` when unknown."""
    if cents is None:
        return "--"
    return f"{'-' if cents < 0 else '+'}${amount(abs(cents))}"


def _position_text(p: Mapping[str, Any]) -> str:
    words = [f"P{p['position']}", p["card"] or "??", p["outcome"] or "?"]
    if p["decision"] is not None:
        words.append(p["decision"])
    if p["war_card"] is not None:
        words += [p["war_card"], p["war_outcome"] or "?"]
    # The tie wagers too, so that a won hand with a lost tie wager reads right.
    for wager in p["wagers"]:
        if wager["spot"] in ("tie", "war_tie"):
            amount = "$?" if wager["amount"] is None else money(wager["amount"])[1:]
            words += [wager["spot"], amount, wager["result"]]
    words.append(money(p["net"]))
    return " ".join(words)


def round_line(played: RoundPlayed) -> str:
    """One round as the headless demo prints it:

    ``round 12  dealer 9H war 5D  P1 7H lose tie $5.00 lose -$30.00 | P3 9D tie war KH win
    +$50.00  net +$20.00  alerts MISREAD`` (``alerts -`` when none).
    """
    r = played.record
    dealer = f"dealer {r['dealer_card'] or '??'}"
    if r["dealer_war_card"] is not None:
        dealer += f" war {r['dealer_war_card']}"
    if r["void"]:
        hands = f"void ({r['void_reason']})"
    else:
        hands = " | ".join(_position_text(p) for p in r["positions"])
    alerts = ",".join(played.alert_codes) or "-"
    return f"round {r['round_id']:>4}  {dealer}  {hands}  net {money(r['net'])}  alerts {alerts}"


def _codes(counts: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{code} {n}" for code, n in counts)


def summary_line(tally: Tally) -> str:
    alerts = f"alerts {tally.alerts}"
    if tally.alerts_by_code:
        alerts += f" ({_codes(tally.alerts_by_code)})"
    return (
        f"rounds {tally.rounds}, ties {tally.ties}, wars {tally.wars}, "
        f"surrenders {tally.surrenders}, voids {tally.voids}, {alerts}, "
        f"players' net {money(tally.players_net)}"
    )
