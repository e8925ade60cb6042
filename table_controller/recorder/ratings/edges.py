"""The exact figures of a round's rules: its profile, its ``rules_overrides`` and the decks.

``rules_overrides`` names the profile's fields by dotted path (``war.win``,
``docs/feed.md``); they are applied to the named profile and the result validated
as a profile, as the table's config does. The decks come from the table's
latest ``status`` (the round record does not carry them); without one, the
profile's default.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import lru_cache
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from table_controller.engine.errors import RulesError
from table_controller.engine.rules import PROFILES, RulesName, RulesProfile
from table_controller.recorder.errors import RatingsError
from table_controller.tools.odds import HouseEdges, house_edges

Json = dict[str, Any]


def _set_path(target: Json, path: str, value: Any) -> None:
    keys = path.split(".")
    node = target
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            raise RatingsError(f"rules_overrides: {path!r}: {key!r} is not a group of fields")
        node = child
    if keys[-1] not in node:
        raise RatingsError(f"rules_overrides: {path!r}: the profile has no such field")
    node[keys[-1]] = value


def profile_for(rules: str, overrides: Json | None = None) -> RulesProfile:
    """The profile named ``rules`` with ``overrides`` applied; RatingsError when unusable."""
    try:
        base = PROFILES[RulesName(rules)]
    except ValueError as exc:
        raise RatingsError(f"rules: {rules!r} is not a rules profile") from exc
    if not overrides:
        return base
    data = asdict(base)
    for path, value in sorted(overrides.items()):
        if path == "name":
            raise RatingsError("rules_overrides: 'name' cannot be overridden")
        _set_path(data, path, value)
    try:
        return _PROFILE.validate_python(data)
    except ValidationError as exc:
        raise RatingsError(f"rules_overrides: {exc.errors()[0]['msg']}") from exc
    except RulesError as exc:
        raise RatingsError(f"rules_overrides: {exc}") from exc


# The profile is a frozen dataclass of the engine; pydantic checks one built from JSON.
_PROFILE: Final = TypeAdapter(RulesProfile)


@lru_cache(maxsize=64)
def _edges(rules: str, overrides: str, decks: int) -> HouseEdges:
    return house_edges(profile_for(rules, json.loads(overrides)), decks)


def edges_for(record: Json, decks: int | None) -> HouseEdges:
    """The exact edges and variances the round ``record`` was dealt under."""
    rules = str(record.get("rules"))
    overrides = record.get("rules_overrides") or {}
    if decks is None:
        decks = profile_for(rules, overrides).decks_default
    return _edges(rules, json.dumps(overrides, sort_keys=True), decks)


def priced(record: Json, decks: int | None) -> HouseEdges | str:
    """The figures of ``record``, or why there are none (a stored round whose overrides
    the odds cannot take must not stop a report: it is weighed as unpriced)."""
    try:
        return edges_for(record, decks)
    except (RatingsError, ValueError) as exc:  # ValueError: decks the odds cannot take
        return f"round {record.get('round_id')}: {exc}"
