"""The odds tool: exact house edges from the shoe composition and the profile's data.

Expected numbers come from docs/rules.md ("Exact house edges") and from closed forms
derived by hand below, never from the code under test.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.cli import main
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
from table_controller.tools.odds import (
    deal_outcomes,
    house_edges,
    wager_distributions,
    war_outcomes,
)
from table_controller.tools.published import (
    PUBLISHED,
    PublishedFigure,
    check_published,
    note_for,
)

# docs/rules.md, "Exact house edges": 6 decks, one position, always going to war.
GAME_MD_EDGE_WAR_6_DECKS = {"standard": "2.3301", "uk": "2.8771", "ny": "1.7830"}
GAME_MD_EDGE_TIE_6_DECKS = "18.6495"
GAME_MD_EDGE_SURRENDER_6_DECKS = "3.6977"
# docs/rules.md, rules profiles table: net per unit of initial wager on war win / tie / loss.
GAME_MD_WAR_NET = {"ny": (1, 3, -2), "uk": (1, 1, -2), "standard": (1, 2, -2)}


def pct4(value: Fraction) -> str:
    """A fraction as a percent string with four decimals, written independently."""
    return f"{float(value) * 100:.4f}"


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


# --- the command ---------------------------------------------------------------


def _odds_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["odds", *argv, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


@pytest.mark.parametrize("name", ["standard", "uk", "ny"])
def test_cli_json(capsys: pytest.CaptureFixture[str], name: str) -> None:
    data = _odds_json(capsys, "--rules", name, "--decks", "6")
    assert data["rules"] == name
    assert data["decks"] == 6
    assert data["edge_war"]["percent"] == float(GAME_MD_EDGE_WAR_6_DECKS[name])
    assert data["edge_tie"]["percent"] == float(GAME_MD_EDGE_TIE_6_DECKS)
    assert data["edge_surrender"]["percent"] == float(GAME_MD_EDGE_SURRENDER_6_DECKS)
    win, tie, lose = (Fraction(v) for v in GAME_MD_WAR_NET[name])
    assert Fraction(data["edge_war"]["fraction"]) == war_edge_closed_form(6, win, tie, lose)
    assert Fraction(data["p_tie"]["fraction"]) == Fraction(23, 311)
    assert Fraction(data["p_war_tie"]["fraction"]) == p_war_tie(6)
    assert data["p_tie"]["percent"] == 7.3955
    if name == "ny":
        assert Fraction(data["edge_war_tie"]["fraction"]) == 1 - 11 * p_war_tie(6)
    else:
        assert data["edge_war_tie"] is None
    assert "extra money" in data["basis"]["edge_war"]
    if name == "uk":
        assert len(data["notes"]) == 1
        assert "2.33" in data["notes"][0]
        assert "2.8771" in data["notes"][0]
        published = {p["edge"]: p for p in data["published"]}
        assert published["edge_war"]["agrees"] is False
        assert published["edge_war"]["matches"] == ["standard"]
        assert published["edge_tie"]["agrees"] is True
    else:
        assert data["notes"] == []


def test_cli_json_default_decks_and_eight_decks(capsys: pytest.CaptureFixture[str]) -> None:
    assert _odds_json(capsys, "--rules", "ny")["decks"] == 6
    data = _odds_json(capsys, "--rules", "ny", "--decks", "8")
    assert Fraction(data["edge_tie"]["fraction"]) == 1 - 11 * p_tie(8)
    assert data["notes"] == []


def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["odds", "--rules", "uk", "--decks", "6"]) == 0
    out = capsys.readouterr().out
    for figure in ("2.8771", "3.6977", "18.6495", "7.3955", "23/311", "not offered"):
        assert figure in out
    assert "extra money" in out
    assert "note:" in out


@pytest.mark.parametrize(
    ("name", "decks", "allowed"),
    [("ny", "5", "6..8"), ("ny", "9", "6..8"), ("uk", "0", "1..8"), ("standard", "9", "1..8")],
)
def test_cli_refuses_decks_outside_the_profile(
    capsys: pytest.CaptureFixture[str], name: str, decks: str, allowed: str
) -> None:
    """§5324.22(c): six, seven or eight decks under ny; 1..8 elsewhere."""
    assert main(["odds", "--rules", name, "--decks", decks]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{decks} decks not allowed by rules '{name}'" in captured.err
    assert allowed in captured.err


def test_cli_refuses_unknown_rules(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["odds", "--rules", "vegas"])
    assert exc.value.code == 2
    assert "vegas" in capsys.readouterr().err


# --- simulation through the engine ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "policy", "exact_percent", "seed"),
    [
        pytest.param("ny", "war", GAME_MD_EDGE_WAR_6_DECKS["ny"], 20241, id="ny-war-seed=20241"),
        pytest.param(
            "standard", "war", GAME_MD_EDGE_WAR_6_DECKS["standard"], 7, id="standard-war-seed=7"
        ),
        pytest.param(
            "uk", "surrender", GAME_MD_EDGE_SURRENDER_6_DECKS, 99, id="uk-surrender-seed=99"
        ),
    ],
)
def test_cli_simulation_within_four_standard_errors(
    capsys: pytest.CaptureFixture[str], name: str, policy: str, exact_percent: str, seed: int
) -> None:
    """Rounds played through the engine land within 4 standard errors of docs/rules.md's figures."""
    rounds = 4000
    data = _odds_json(
        capsys,
        "--rules", name, "--decks", "6",
        "--simulate", str(rounds), "--seed", str(seed), "--policy", policy,
    )  # fmt: skip
    sim = data["simulation"]
    assert sim["rounds"] == rounds
    assert sim["seed"] == seed
    assert sim["policy"] == policy
    assert sim["units_wagered"] == rounds
    checks = [(sim[f"edge_{policy}"], float(exact_percent)), (sim["edge_tie"], 18.6495)]
    for figure, exact in checks:
        assert figure["exact_percent"] == exact
        stderr = figure["stderr_percent"]
        assert 0 < stderr < 5  # a few thousand rounds measure to about a percent
        assert abs(figure["measured_percent"] - exact) <= 4 * stderr
    # The players' net and the edge agree with each other.
    measured = sim[f"edge_{policy}"]["measured_percent"]
    assert measured == pytest.approx(-100 * sim["net_units"] / rounds, abs=1e-4)


def test_cli_simulation_table_and_no_simulation_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["odds", "--rules", "ny", "--simulate", "300", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "simulated 300 rounds through the engine (seed 3" in out
    assert "measured %" in out
    assert _odds_json(capsys, "--rules", "ny")["simulation"] is None


def test_cli_refuses_no_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["odds", "--rules", "ny", "--simulate", "0"]) == 2
    assert "--simulate needs at least 1 round" in capsys.readouterr().err


# --- variance and standard deviation per unit ------------------------------------

# docs/rules.md, "net per unit on war win / war tie / war loss", written out independently.
GAME_MD_WAR_NETS = {"ny": (1, 3, -2), "uk": (1, 1, -2), "standard": (1, 2, -2)}


def _enumerated(name: str, counts: tuple[int, ...]) -> dict[str, list[Fraction]]:
    """The player's net of each wager over every ordering of a small shoe, equally likely.

    Every card is dealt as at the table, the three war burns included (§(i)(5)(i)):
    nothing here relies on the shoe being exchangeable.
    """
    rules = PROFILES[RulesName(name)]
    war_win, war_tie, war_lose = GAME_MD_WAR_NETS[name]
    shoe = [rank for rank, count in enumerate(counts) for _ in range(count)]
    nets: dict[str, list[Fraction]] = {"war": [], "surrender": [], "tie": [], "war_tie": []}
    for order in set(itertools.permutations(shoe)):
        player, dealer = order[0], order[1]
        tied = player == dealer
        nets["tie"].append(Fraction(10) if tied else Fraction(-1))
        if not tied:
            net = Fraction(rules.initial_odds) if player > dealer else Fraction(-1)
            nets["war"].append(net)
            nets["surrender"].append(net)
            continue
        nets["surrender"].append(Fraction(-1, 2))
        war_player, war_dealer = order[5], order[6]  # after three burns
        if war_player > war_dealer:
            nets["war"].append(Fraction(war_win))
        elif war_player == war_dealer:
            nets["war"].append(Fraction(war_tie))
        else:
            nets["war"].append(Fraction(war_lose))
        nets["war_tie"].append(Fraction(10) if war_player == war_dealer else Fraction(-1))
    return nets


def _mean_and_variance(xs: list[Fraction]) -> tuple[Fraction, Fraction]:
    mean = sum(xs, Fraction(0)) / len(xs)
    return mean, sum(((x - mean) ** 2 for x in xs), Fraction(0)) / len(xs)


@pytest.mark.parametrize("counts", [(3, 3, 2), (2, 3, 3), (4, 2, 2)], ids=str)
@pytest.mark.parametrize("name", ["ny", "uk", "standard"])
def test_variance_equals_an_exhaustive_enumeration_of_a_small_shoe(
    name: str, counts: tuple[int, ...]
) -> None:
    wagers = wager_distributions(PROFILES[RulesName(name)], counts)
    enumerated = _enumerated(name, counts)
    for edge, key in (("edge_war", "war"), ("edge_surrender", "surrender"), ("edge_tie", "tie")):
        wager = wagers[edge]  # type: ignore[index]
        assert wager is not None
        assert (wager.mean, wager.variance) == _mean_and_variance(enumerated[key]), edge
    war_tie = wagers["edge_war_tie"]
    if name == "ny":
        assert war_tie is not None
        assert (war_tie.mean, war_tie.variance) == _mean_and_variance(enumerated["war_tie"])
    else:
        assert war_tie is None


def test_a_two_outcome_wager_has_the_closed_form_variance() -> None:
    # The tie wager wins 10 or loses 1: variance p(1 - p)(10 + 1)^2.
    p = Fraction(23, 311)
    edges = house_edges(NY, 6)
    assert edges.variance("edge_tie") == p * (1 - p) * 121
    assert edges.offered("edge_tie").sd == pytest.approx(2.878674, abs=1e-6)


@pytest.mark.parametrize(
    ("name", "policy", "seed"),
    [
        pytest.param("ny", "war", 11, id="ny-war-seed=11"),
        pytest.param("uk", "surrender", 12, id="uk-surrender-seed=12"),
        pytest.param("standard", "war", 13, id="standard-war-seed=13"),
    ],
)
def test_a_seeded_simulation_measures_the_exact_standard_deviation(
    capsys: pytest.CaptureFixture[str], name: str, policy: str, seed: int
) -> None:
    """20,000 rounds through the engine measure each sd within 5 % (about 4 of its own
    standard errors for the tie wager, 10 for the main wager)."""
    data = _odds_json(
        capsys,
        "--rules", name, "--decks", "6",
        "--simulate", "20000", "--seed", str(seed), "--policy", policy,
    )  # fmt: skip
    for key in (f"edge_{policy}", "edge_tie"):
        figure = data["simulation"][key]
        assert figure["exact_sd"] == data[key]["sd"]
        assert figure["measured_sd"] == pytest.approx(figure["exact_sd"], rel=0.05), key


@pytest.mark.parametrize("name", ["ny", "uk", "standard"])
def test_json_lists_the_variance_and_sd_of_every_wager(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    data = _odds_json(capsys, "--rules", name, "--decks", "6")
    edges = house_edges(PROFILES[RulesName(name)], 6)
    for key in ("edge_war", "edge_surrender", "edge_tie", "edge_war_tie"):
        wager = edges.wagers[key]
        if wager is None:
            assert data[key] is None
            continue
        assert Fraction(data[key]["variance"]["fraction"]) == wager.variance
        assert data[key]["sd"] == round(wager.sd, 6)
        assert data[key]["sd"] ** 2 == pytest.approx(data[key]["variance"]["value"], rel=1e-5)


def test_the_text_lists_the_sd_of_every_wager(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["odds", "--rules", "ny", "--decks", "6"]) == 0
    out = capsys.readouterr().out
    assert "sd/unit" in out
    for sd in ("1.070595", "0.971168", "2.878674", "2.879020"):
        assert sd in out
