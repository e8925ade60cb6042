"""The odds tool's variance and standard deviation per unit of each wager: against an
exhaustive enumeration of small shoes, a closed form, a seeded simulation through the
engine, and as the command prints them."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from table_controller.cli import main
from table_controller.engine.rules import NY, PROFILES, RulesName
from table_controller.tools.odds import house_edges, wager_distributions
from tests.odds_figures import _odds_json

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
