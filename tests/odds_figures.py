"""What the odds tool's tests expect, written independently of the code under test:
docs/rules.md's figures ("Exact house edges" and the profiles' war nets), the closed
forms derived by hand, and the command's JSON."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from table_controller.cli import main

# docs/rules.md, "Exact house edges": 6 decks, one position, always going to war.
GAME_MD_EDGE_WAR_6_DECKS = {"standard": "2.3301", "uk": "2.8771", "ny": "1.7830"}
GAME_MD_EDGE_TIE_6_DECKS = "18.6495"
GAME_MD_EDGE_SURRENDER_6_DECKS = "3.6977"
# docs/rules.md, rules profiles table: net per unit of initial wager on war win / tie / loss.
GAME_MD_WAR_NET = {"ny": (1, 3, -2), "uk": (1, 1, -2), "standard": (1, 2, -2)}


# Closed forms, by hand. A shoe of d decks holds N = 52d cards, 4d of each of 13
# ranks. Original deal: the dealer's card matches the player's with probability
# (4d − 1)/(52d − 1). Given a tie on rank r, the war deal is from N − 2 cards:
# 4d − 2 of rank r and 4d of each of the other 12 ranks, so
# P(war tie) = [(4d−2)(4d−3) + 12·4d·(4d−1)] / [(52d−2)(52d−3)].
# Player and dealer are symmetric, so a non-tie is a win or a loss with equal chance.
def p_tie(d: int) -> Fraction:
    return Fraction(4 * d - 1, 52 * d - 1)


def p_war_tie(d: int) -> Fraction:
    return Fraction(
        (4 * d - 2) * (4 * d - 3) + 12 * 4 * d * (4 * d - 1), (52 * d - 2) * (52 * d - 3)
    )


def war_edge_closed_form(d: int, win: Fraction, tie: Fraction, lose: Fraction) -> Fraction:
    """House edge per unit of initial wager, always going to war, initial wager 1:1."""
    p, q = p_tie(d), p_war_tie(d)
    half = (1 - q) / 2
    return -p * (half * win + q * tie + half * lose)


def _odds_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["odds", *argv, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data
