"""``table-controller odds``: the JSON and the table it prints against docs/rules.md's
figures, the decks and rules it refuses, and a simulation through the engine that lands
within four standard errors of the exact edges."""

from __future__ import annotations

from fractions import Fraction

import pytest

from table_controller.cli import main
from tests.odds_figures import (
    GAME_MD_EDGE_SURRENDER_6_DECKS,
    GAME_MD_EDGE_TIE_6_DECKS,
    GAME_MD_EDGE_WAR_6_DECKS,
    GAME_MD_WAR_NET,
    _odds_json,
    p_tie,
    p_war_tie,
    war_edge_closed_form,
)

# --- the command ---------------------------------------------------------------


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
