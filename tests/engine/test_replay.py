"""Replay: the same inputs rebuild the identical table and outputs (GAME.md, last paragraph)."""

from __future__ import annotations

import json

import pytest

from table_controller.engine import (
    RoundEngine,
    TableState,
    initial_state,
    input_from_json,
    input_to_json,
    replay,
    transition,
)
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

from .helpers import random_session

CASES = [
    pytest.param(rules, seed, id=f"{rules.name.value}-seed={seed}")
    for rules, seed in ((NY, 11), (UK, 12), (STANDARD, 13))
]


@pytest.mark.parametrize(("rules", "seed"), CASES)
def test_replay_rebuilds_identical_state_and_outputs(rules: RulesProfile, seed: int) -> None:
    t = random_session(rules, seed, rounds=40)
    assert len(t.records()) >= 40
    state, outputs = replay(t.setup, t.inputs)
    assert state == t.state
    assert outputs == t.outputs


@pytest.mark.parametrize(("rules", "seed"), CASES)
def test_replay_of_the_journal_form(rules: RulesProfile, seed: int) -> None:
    """Inputs through JSON text (as journaled) replay to the same table."""
    t = random_session(rules, seed, rounds=25)
    journal = [json.dumps(input_to_json(i)) for i in t.inputs]
    state, outputs = replay(t.setup, (input_from_json(json.loads(line)) for line in journal))
    assert state == t.state
    assert outputs == t.outputs


def test_a_restart_midway_continues_exactly() -> None:
    """Rebuild from the first half of the journal, then carry on: as if never stopped."""
    t = random_session(NY, 21, rounds=30)
    half = len(t.inputs) // 2
    rebuilt, _ = replay(t.setup, t.inputs[:half])
    engine = RoundEngine(t.setup, rebuilt)
    rest = [o for inp in t.inputs[half:] for o in engine.feed(inp)]
    assert engine.state == t.state
    # Every event number continues where it stopped: seq survives the restart.
    full = t.outputs
    assert rest == full[len(full) - len(rest) :]


def test_transition_does_not_change_its_input_state() -> None:
    t = random_session(UK, 5, rounds=5)
    state = initial_state(t.setup)
    snapshots: list[TableState] = []
    for inp in t.inputs:
        before = state
        copy = replay(t.setup, t.inputs[: len(snapshots)])[0]
        assert before == copy
        state, _ = transition(state, inp)
        snapshots.append(state)
        if len(snapshots) > 60:
            break


def test_round_engine_refuses_a_state_of_another_table() -> None:
    from table_controller.engine import TableSetup

    with pytest.raises(ValueError, match="setup"):
        RoundEngine(TableSetup(NY, 6, 7), initial_state(TableSetup(NY, 6, 5)))
