"""Checkpoints: the engine's state as versioned JSON (GAME.md, last paragraph).

The table state is one immutable value made of named tuples, enums, times,
tuples and frozensets (``engine/state.py``). A checkpoint writes it out with
each named tuple and enum tagged by its class name, and a *shape*: every
named tuple's field names. A checkpoint whose version or shape is not this
engine's is refused by name, never read into a wrong state. The table's setup
(rules, decks, positions, limits) goes with it as settings (``setup_json``), so
that a checkpoint taken before a change of settings replays under the old ones.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import Enum
from typing import Any, Final

from table_controller.engine import TableSetup, TableState
from table_controller.engine import state as engine_state
from table_controller.engine.rules import Limits, RulesProfile

CHECKPOINT_VERSION: Final = 1


def _registry() -> tuple[dict[str, type[tuple[Any, ...]]], dict[str, type[Enum]]]:
    tuples: dict[str, type[tuple[Any, ...]]] = {}
    enums: dict[str, type[Enum]] = {}
    for name, value in vars(engine_state).items():
        if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields"):
            tuples[name] = value
        elif (
            isinstance(value, type)
            and issubclass(value, Enum)
            and value.__module__ == (engine_state.__name__)
        ):
            enums[name] = value
    return tuples, enums


_TUPLES, _ENUMS = _registry()
SHAPE: Final = hashlib.sha256(
    json.dumps({n: list(t._fields) for n, t in sorted(_TUPLES.items())}).encode()  # type: ignore[attr-defined]
).hexdigest()[:16]


class CheckpointError(ValueError):
    """A checkpoint cannot be read by this engine; the message says why."""


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return {"e": type(value).__name__, "v": value.value}
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return {"dt": value.isoformat()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = [_encode(v) for v in value[1:]] if isinstance(value, TableState) else None
        if fields is not None:
            # The setup goes beside the state, as settings (setup_json).
            return {"nt": "TableState", "f": [None, *fields]}
        return {"nt": type(value).__name__, "f": [_encode(v) for v in value]}
    if isinstance(value, tuple):
        return {"t": [_encode(v) for v in value]}
    if isinstance(value, frozenset):
        return {"fs": sorted(_encode(v) for v in value)}
    raise TypeError(f"checkpoint: cannot write a {type(value).__name__}")


def _decode(value: Any) -> Any:
    if not isinstance(value, dict):
        if isinstance(value, list):
            raise CheckpointError("checkpoint: a bare list where a tagged value belongs")
        return value
    if "nt" in value:
        cls = _TUPLES.get(value["nt"])
        if cls is None:
            raise CheckpointError(f"checkpoint: unknown part {value['nt']!r}")
        return cls(*(_decode(v) for v in value["f"]))
    if "e" in value:
        enum = _ENUMS.get(value["e"])
        if enum is None:
            raise CheckpointError(f"checkpoint: unknown enum {value['e']!r}")
        return enum(value["v"])
    if "dt" in value:
        return datetime.fromisoformat(value["dt"])
    if "t" in value:
        return tuple(_decode(v) for v in value["t"])
    if "fs" in value:
        return frozenset(_decode(v) for v in value["fs"])
    raise CheckpointError(f"checkpoint: unknown value {sorted(value)}")


def setup_json(setup: TableSetup) -> dict[str, Any]:
    """The game settings of a table as JSON: what a journal records and compares."""
    return {
        "rules": setup.rules.model_dump(mode="json"),
        "decks": setup.decks,
        "positions": setup.positions,
        "limits": setup.limits.model_dump(mode="json"),
    }


def setup_from_json(data: Any) -> TableSetup:
    try:
        return TableSetup(
            rules=RulesProfile.model_validate(data["rules"]),
            decks=data["decks"],
            positions=data["positions"],
            limits=Limits.model_validate(data["limits"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint: unreadable settings: {exc}") from exc


def dump_state(state: TableState) -> str:
    """The checkpoint body of ``state`` (compact JSON), its settings included."""
    return json.dumps(
        {"shape": SHAPE, "setup": setup_json(state.setup), "state": _encode(state)},
        separators=(",", ":"),
        allow_nan=False,
    )


def load_state(body: str, version: int) -> TableState:
    """The state a checkpoint holds, under the settings it was taken with."""
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint version {version}, this engine reads {CHECKPOINT_VERSION}"
        )
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"checkpoint: not JSON: {exc}") from exc
    if data.get("shape") != SHAPE:
        raise CheckpointError(
            f"checkpoint shape {data.get('shape')!r} is another engine's (this one: {SHAPE})"
        )
    try:
        state = _decode(data["state"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint: unreadable state: {exc}") from exc
    if not isinstance(state, TableState):
        raise CheckpointError("checkpoint: not a table state")
    return state._replace(setup=setup_from_json(data.get("setup")))
