"""The odds tool: exact house edges from the shoe composition and the profile's data.

Expected numbers come from docs/rules.md ("Exact house edges") and from closed forms
derived by hand (tests/odds_figures.py), never from the code under test: the six-deck
figures, brute force over small shoes, invariants over every shoe size and the
published figures.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.engine.rules import (
    NY,
    PROFILES,
    STANDARD,
    UK,
    RulesName,
    WagerResult,
    WagerSettlement,
    WarAccounting,
    WarSettlement,
)
from table_controller.tools.odds import deal_outcomes, house_edges, war_outcomes
from table_controller.tools.published import PUBLISHED, PublishedFigure, check_published, note_for
from tests.odds_figures import (
    GAME_MD_EDGE_SURRENDER_6_DECKS,
    GAME_MD_EDGE_TIE_6_DECKS,
    GAME_MD_EDGE_WAR_6_DECKS,
    GAME_MD_WAR_NET,
    p_tie,
    p_war_tie,
    war_edge_closed_form,
)


def pct4(value: Fraction) -> str:
    """A fraction as a percent string with four decimals, written independently."""
    return f"{float(value) * 100:.4f}"


def _net(s: WarSettlement) -> Fraction:
    return s.initial.net_per_unit + s.war.net_per_unit


# --- exact figures against docs/rules.md -------------------------------------------


@pytest.mark.parametrize("name", ["standard", "uk", "ny"])
def test_six_deck_edges_are_game_md_figures(name: str) -> None:
    edges = house_edges(PROFILES[RulesName(name)], 6)
    assert pct4(edges.edge_war) == GAME_MD_EDGE_WAR_6_DECKS[name]
    assert pct4(edges.edge_tie) == GAME_MD_EDGE_TIE_6_DECKS
    assert pct4(edges.edge_surrender) == GAME_MD_EDGE_SURRENDER_6_DECKS


@pytest.mark.parametrize("name", ["standard", "uk", "ny"])
@pytest.mark.parametrize("decks", range(1, 9))
def test_war_edge_is_the_hand_closed_form(name: str, decks: int) -> None:
    """docs/rules.md's net per unit (+1 / war tie / −2) in the closed form, for every shoe size."""
    win, tie, lose = (Fraction(v) for v in GAME_MD_WAR_NET[name])
    edges = house_edges(PROFILES[RulesName(name)], decks)
    assert edges.edge_war == war_edge_closed_form(decks, win, tie, lose)


@pytest.mark.parametrize("decks", range(1, 9))
def test_tie_wager_edge_closed_form(decks: int) -> None:
    """§(j)(2) 10:1 on a tie: edge = 1 − 11·(4d − 1)/(52d − 1)."""
    expected = 1 - Fraction(11 * (4 * decks - 1), 52 * decks - 1)
    for rules in PROFILES.values():
        assert house_edges(rules, decks).edge_tie == expected
    assert house_edges(NY, 6).edge_tie == Fraction(58, 311)


def test_war_tie_wager_only_where_allowed() -> None:
    """§(i)(5): ny offers a tie wager on the war deal; uk and standard do not."""
    assert house_edges(UK, 6).edge_war_tie is None
    assert house_edges(STANDARD, 6).edge_war_tie is None
    ny = house_edges(NY, 6).edge_war_tie
    assert ny == 1 - 11 * p_war_tie(6)
    assert pct4(ny) == "18.6282"


def test_probabilities_six_decks() -> None:
    edges = house_edges(NY, 6)
    assert edges.p_tie == Fraction(23, 311)
    # (22·21 + 12·24·23) / (310·309) = 7086 / 95790
    assert edges.p_war_tie == Fraction(7086, 95790)


# --- brute force over small shoes: the composition logic and the burn argument


def _enumerate_deal(cards: list[int]) -> tuple[Fraction, Fraction, Fraction]:
    win = tie = lose = 0
    total = 0
    for p, d in itertools.permutations(range(len(cards)), 2):
        total += 1
        a, b = cards[p], cards[d]
        win += a > b
        tie += a == b
        lose += a < b
    return Fraction(win, total), Fraction(tie, total), Fraction(lose, total)


def _enumerate_war(cards: list[int], burns: int) -> tuple[Fraction, Fraction, Fraction]:
    """Every ordered deal of player, dealer, ``burns`` unseen cards, war player, war dealer."""
    win = tie = lose = total = 0
    for seq in itertools.permutations(range(len(cards)), 4 + burns):
        if cards[seq[0]] != cards[seq[1]]:
            continue
        total += 1
        a, b = cards[seq[-2]], cards[seq[-1]]
        win += a > b
        tie += a == b
        lose += a < b
    return Fraction(win, total), Fraction(tie, total), Fraction(lose, total)


small_shoes = st.lists(st.integers(0, 3), min_size=2, max_size=4).filter(
    lambda c: sum(c) >= 4 and sum(c) <= 7 and any(x >= 2 for x in c)
)


@settings(max_examples=40)
@given(counts=small_shoes, burns=st.integers(0, 1))
def test_small_shoes_match_enumeration(counts: list[int], burns: int) -> None:
    """Every ordered deal enumerated, with burns drawn between: burns change nothing."""
    cards = [rank for rank, c in enumerate(counts) for _ in range(c)]
    o = deal_outcomes(tuple(counts))
    assert (o.win, o.tie, o.lose) == _enumerate_deal(cards)
    if sum(counts) - 4 - burns >= 0:
        w = war_outcomes(tuple(counts))
        assert (w.win, w.tie, w.lose) == _enumerate_war(cards, burns)


# --- invariants over every shoe size -------------------------------------------

decks_1_to_8 = st.integers(min_value=1, max_value=8)


@settings(max_examples=30)
@given(decks=decks_1_to_8)
def test_probabilities_are_probabilities(decks: int) -> None:
    for rules in PROFILES.values():
        e = house_edges(rules, decks)
        for o in (e.original, e.war):
            assert all(0 <= x <= 1 for x in (o.win, o.tie, o.lose))
            assert o.win + o.tie + o.lose == 1
            assert o.win == o.lose  # the player's and the dealer's cards are symmetric
        assert e.p_tie == p_tie(decks)
        assert e.p_war_tie == p_war_tie(decks)


@settings(max_examples=30)
@given(decks=decks_1_to_8)
def test_surrender_edge_is_p_tie_times_surrender_loss(decks: int) -> None:
    """§(i)(3)(i): a non-tie nets zero on average, a tie forfeits surrender_loss."""
    for rules in PROFILES.values():
        e = house_edges(rules, decks)
        assert e.edge_surrender == e.p_tie * rules.surrender_loss
        # Going to war always beats surrendering under every shipped profile.
        assert 0 < e.edge_war < e.edge_surrender


@settings(max_examples=30)
@given(decks=st.integers(min_value=1, max_value=7))
def test_edges_move_with_the_number_of_decks(decks: int) -> None:
    """More decks: ties likelier, so surrender costs more and the tie wagers cost less."""
    for rules in PROFILES.values():
        a, b = house_edges(rules, decks), house_edges(rules, decks + 1)
        assert a.p_tie < b.p_tie
        assert a.p_war_tie < b.p_war_tie
        assert a.edge_surrender < b.edge_surrender
        assert a.edge_tie > b.edge_tie
        if a.edge_war_tie is not None:
            assert b.edge_war_tie is not None
            assert a.edge_war_tie > b.edge_war_tie


@settings(max_examples=30)
@given(decks=decks_1_to_8)
def test_a_richer_war_tie_lowers_the_edge(decks: int) -> None:
    """War tie nets +3 (ny) > +2 (standard) > +1 (uk); the other war outcomes agree."""
    ny, std, uk = (house_edges(r, decks).edge_war for r in (NY, STANDARD, UK))
    assert ny < std < uk
    # Each extra unit on a war tie is worth exactly P(tie)·P(war tie).
    assert uk - std == std - ny == p_tie(decks) * p_war_tie(decks)


fractions = st.fractions(min_value=-3, max_value=5, max_denominator=4)


def _settle(npu: Fraction) -> WagerSettlement:
    result: WagerResult = "win" if npu > 0 else "lose" if npu < 0 else "push"
    return WagerSettlement(result=result, net_per_unit=npu, odds="1:1")


@settings(max_examples=60)
@given(
    decks=decks_1_to_8,
    nets=st.lists(fractions, min_size=6, max_size=6),
    tie_odds=st.integers(1, 50),
    surrender_loss=st.fractions(min_value=0, max_value=1, max_denominator=8),
    war_tie_allowed=st.booleans(),
)
def test_any_profile_data_gives_the_closed_form(
    decks: int,
    nets: list[Fraction],
    tie_odds: int,
    surrender_loss: Fraction,
    war_tie_allowed: bool,
) -> None:
    """The edges follow the profile's data only: any war accounting, odds and loss."""
    war = WarAccounting(
        win=WarSettlement(initial=_settle(nets[0]), war=_settle(nets[1])),
        tie=WarSettlement(initial=_settle(nets[2]), war=_settle(nets[3])),
        lose=WarSettlement(initial=_settle(nets[4]), war=_settle(nets[5])),
        initial_collected_at_war_decision=False,
    )
    rules = replace(
        STANDARD,
        war=war,
        tie_odds=tie_odds,
        surrender_loss=surrender_loss,
        war_tie_wager_allowed=war_tie_allowed,
    )
    e = house_edges(rules, decks)
    p, q = p_tie(decks), p_war_tie(decks)
    assert e.edge_war == war_edge_closed_form(
        decks, nets[0] + nets[1], nets[2] + nets[3], nets[4] + nets[5]
    )
    assert e.edge_surrender == p * surrender_loss
    assert e.edge_tie == 1 - (tie_odds + 1) * p
    assert e.edge_war_tie == ((1 - (tie_odds + 1) * q) if war_tie_allowed else None)


# --- published figures -----------------------------------------------------------


def test_uk_outline_figure_disagrees_with_its_written_rule() -> None:
    """The UK outline prints 2.33 % for six decks; its rule gives 2.8771 %."""
    checks = {c.figure.edge: c for c in check_published(UK, 6)}
    war = checks["edge_war"]
    assert not war.agrees
    assert war.matches == (RulesName.STANDARD,)
    note = note_for(war, UK)
    assert note is not None
    assert "2.33" in note
    assert "2.8771" in note
    assert "`standard`" in note
    assert "2.3301" in note
    tie = checks["edge_tie"]
    assert tie.agrees
    assert note_for(tie, UK) is None


def test_published_figures_are_data() -> None:
    """A figure that agrees makes no note; one that does not makes one; others ignored."""
    agreeing = PublishedFigure(
        rules=RulesName.NY,
        decks=6,
        edge="edge_war",
        percent=Decimal("1.78"),
        source="a source",
        text="1.78%",
    )
    wrong = PublishedFigure(
        rules=RulesName.NY,
        decks=6,
        edge="edge_tie",
        percent=Decimal("20.00"),
        source="another source",
        text="20%",
    )
    elsewhere = PublishedFigure(
        rules=RulesName.NY,
        decks=7,
        edge="edge_tie",
        percent=Decimal("1.00"),
        source="a third source",
        text="1%",
    )
    checks = check_published(NY, 6, (agreeing, wrong, elsewhere))
    assert [c.agrees for c in checks] == [True, False]
    assert note_for(checks[0], NY) is None
    note = note_for(checks[1], NY)
    assert note is not None
    assert "20.00" in note
    assert "another source" in note
    assert checks[1].matches == ()
    assert all(f.rules is RulesName.UK for f in PUBLISHED)
