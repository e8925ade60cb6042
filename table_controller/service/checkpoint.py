"""Checkpoints: the engine's snapshot as versioned JSON (docs/rules.md, restarts).

A checkpoint is the engine's own serialisable snapshot (``EngineSnapshot.to_json``,
versioned by the engine) beside the table's setup (rules, decks, positions, limits,
overrides: ``setup_json``), so that a checkpoint taken before a change of settings
replays under the old ones. One whose version is not this service's, or whose
snapshot the engine cannot read, is refused by name, never read into a wrong state.
"""

from __future__ import annotations

import json
from typing import Any, Final

from table_controller.engine import EngineSnapshot, RoundEngine, SnapshotError, TableSetup
from table_controller.engine.jsonform import from_jsonable, to_jsonable

# 2: the engine's snapshot (1 held the engine's former immutable state).
CHECKPOINT_VERSION: Final = 2


class CheckpointError(ValueError):
    """A checkpoint this service cannot read; the message says what is wrong."""


def setup_json(setup: TableSetup) -> dict[str, Any]:
    """The game settings of a table as JSON: what a journal records and compares."""
    data = to_jsonable(setup)
    assert isinstance(data, dict)
    return data


def setup_from_json(data: Any) -> TableSetup:
    try:
        setup = from_jsonable(TableSetup, data, "settings")
    except (SnapshotError, ValueError, TypeError) as exc:
        raise CheckpointError(f"checkpoint: unreadable settings: {exc}") from exc
    assert isinstance(setup, TableSetup)
    return setup


def dump_state(engine: RoundEngine) -> str:
    """The checkpoint body of ``engine`` now (compact JSON), its settings included."""
    return json.dumps(
        {"setup": setup_json(engine.setup), "snapshot": engine.snapshot().to_json()},
        separators=(",", ":"),
        allow_nan=False,
    )


def load_state(body: str, version: int) -> tuple[TableSetup, EngineSnapshot]:
    """The settings and the snapshot a checkpoint holds."""
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint version {version}, this service reads {CHECKPOINT_VERSION}"
        )
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"checkpoint: not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CheckpointError("checkpoint: not an object")
    setup = setup_from_json(data.get("setup"))
    try:
        snapshot = EngineSnapshot.from_json(data.get("snapshot"))
    except SnapshotError as exc:
        raise CheckpointError(f"checkpoint: unreadable snapshot: {exc}") from exc
    return setup, snapshot


def load_engine(body: str, version: int) -> RoundEngine:
    """The engine carrying on from the checkpoint."""
    setup, snapshot = load_state(body, version)
    return RoundEngine.from_snapshot(setup, snapshot)
