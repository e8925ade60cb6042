"""Replay and snapshots: the same inputs rebuild the identical table and outputs.

docs/rules.md, last paragraph: everything the table knows is rebuilt from the
journal, from the latest checkpoint of the engine's state and the inputs
journaled after it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.engine import (
    SNAPSHOT_VERSION,
    EngineSnapshot,
    Phase,
    RoundEngine,
    SetLights,
    SnapshotError,
    TableSetup,
    input_from_json,
    input_to_json,
    replay,
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
    engine, outputs = replay(t.setup, t.inputs)
    assert engine.snapshot() == t.state
    assert outputs == t.outputs


@pytest.mark.parametrize(("rules", "seed"), CASES)
def test_replay_of_the_journal_form(rules: RulesProfile, seed: int) -> None:
    """Inputs through JSON text (as journaled) replay to the same table."""
    t = random_session(rules, seed, rounds=25)
    journal = [json.dumps(input_to_json(i)) for i in t.inputs]
    engine, outputs = replay(t.setup, (input_from_json(json.loads(line)) for line in journal))
    assert engine.snapshot() == t.state
    assert outputs == t.outputs


@pytest.mark.parametrize(("rules", "seed"), CASES)
def test_the_lights_are_read_from_the_state_as_the_last_set_lights_said(
    rules: RulesProfile, seed: int
) -> None:
    """A table rebuilt from its journal (a power cut) lights its board from its state
    alone: after every input that is what the last ``SetLights`` said."""
    t = random_session(rules, seed, rounds=60)
    engine, lit, seen = RoundEngine(t.setup), 0, set()
    for inp in t.inputs:
        for out in engine.feed(inp):
            if isinstance(out, SetLights):
                lit = out.mask
        assert engine.lights == lit, (engine.phase, inp)
        seen.add((engine.phase, lit != 0))
    # Lit in the deal and in the tie decision, and dark otherwise, each at least once.
    assert {(Phase.DEALING, True), (Phase.TIE_DECISION, True), (Phase.BETTING, False)} <= seen


def test_a_restart_midway_continues_exactly() -> None:
    """Rebuild from a checkpoint of the first half, then carry on: as if never stopped."""
    t = random_session(NY, 21, rounds=30)
    half = len(t.inputs) // 2
    rebuilt, _ = replay(t.setup, t.inputs[:half])
    checkpoint = json.dumps(rebuilt.snapshot().to_json())
    engine = RoundEngine.from_snapshot(t.setup, EngineSnapshot.from_json(json.loads(checkpoint)))
    rest = [o for inp in t.inputs[half:] for o in engine.feed(inp)]
    assert engine.snapshot() == t.state
    # Every event number continues where it stopped: seq survives the restart.
    full = t.outputs
    assert rest == full[len(full) - len(rest) :]


def test_a_snapshot_does_not_change_as_the_table_goes_on() -> None:
    t = random_session(UK, 5, rounds=5)
    engine = RoundEngine(t.setup)
    taken: list[tuple[EngineSnapshot, str]] = []
    for inp in t.inputs[:200]:
        engine.feed(inp)
        snap = engine.snapshot()
        taken.append((snap, json.dumps(snap.to_json())))
    for snap, text in taken:
        assert json.dumps(snap.to_json()) == text


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), rounds=st.integers(1, 6), cut=st.floats(0, 1))
def test_snapshot_json_round_trip(seed: int, rounds: int, cut: float) -> None:
    """to_json / from_json round-trip at any point of any session."""
    t = random_session(NY if seed % 2 else UK, seed, rounds=rounds)
    engine, _ = replay(t.setup, t.inputs[: int(len(t.inputs) * cut)])
    snap = engine.snapshot()
    data = json.loads(json.dumps(snap.to_json()))
    assert data["version"] == SNAPSHOT_VERSION
    assert EngineSnapshot.from_json(data) == snap


def test_a_malformed_snapshot_is_refused_naming_the_field() -> None:
    data = RoundEngine(TableSetup(NY, 6, 7)).snapshot().to_json()
    with pytest.raises(SnapshotError, match="version"):
        EngineSnapshot.from_json({**data, "version": SNAPSHOT_VERSION + 1})
    with pytest.raises(SnapshotError, match=r"snapshot\.round_id"):
        EngineSnapshot.from_json({**data, "round_id": "one"})
    shoe = {**data["shoe"], "cards_read": None}  # type: ignore[dict-item]
    with pytest.raises(SnapshotError, match=r"snapshot\.shoe\.cards_read"):
        EngineSnapshot.from_json({**data, "shoe": shoe})
    with pytest.raises(SnapshotError, match=r"snapshot\.extra"):
        EngineSnapshot.from_json({**data, "extra": 1})


def test_round_engine_refuses_a_snapshot_of_another_table() -> None:
    snap = RoundEngine(TableSetup(NY, 6, 5)).snapshot()
    with pytest.raises(SnapshotError, match="setup"):
        RoundEngine.from_snapshot(TableSetup(NY, 6, 7), snap)
