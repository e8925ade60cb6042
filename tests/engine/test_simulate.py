"""Seeded simulations through the real engine land on docs/rules.md's exact house edges."""

from __future__ import annotations

import pytest

from table_controller.engine import simulate
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

# docs/rules.md "Exact house edges" (6 decks, one position, always going to war).
EXACT_WAR = {"standard": 0.023301, "uk": 0.028771, "ny": 0.017830}
EXACT_TIE_BET = 0.186495
EXACT_SURRENDER = 0.036977
ROUNDS = 20_000


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rules", "seed"),
    [
        pytest.param(r, s, id=f"{r.name.value}-seed={s}")
        for r, s in ((STANDARD, 101), (UK, 202), (NY, 303))
    ],
)
def test_measured_edge_always_war_within_four_standard_errors(
    rules: RulesProfile, seed: int
) -> None:
    result = simulate(rules, 6, ROUNDS, seed)
    assert result.rounds == ROUNDS
    assert result.units_wagered == ROUNDS
    assert result.wars == result.ties > 0
    exact = EXACT_WAR[rules.name.value]
    assert abs(result.edge - exact) < 4 * result.stderr, (result.edge, exact, result.stderr)
    assert abs(result.tie_bet_edge - EXACT_TIE_BET) < 4 * result.tie_bet_stderr


def test_measured_edge_always_surrendering() -> None:
    """seed=404"""
    result = simulate(NY, 6, 10_000, 404, positions=3, policy="surrender")
    assert result.wars == 0
    assert abs(result.edge - EXACT_SURRENDER) < 4 * result.stderr


def test_simulation_is_reproducible_from_its_seed() -> None:
    """seed=7"""
    a = simulate(UK, 2, 300, 7, positions=4, penetration=0.9)
    b = simulate(UK, 2, 300, 7, positions=4, penetration=0.9)
    assert a == b
    assert a.shoes > 1
    c = simulate(UK, 2, 300, 8, positions=4, penetration=0.9)
    assert c != a


def test_simulation_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="rounds"):
        simulate(NY, 6, 0, 1)
    with pytest.raises(ValueError, match="penetration"):
        simulate(NY, 6, 10, 1, penetration=1.5)
