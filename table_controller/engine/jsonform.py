"""Frozen dataclasses and NamedTuples to JSON-ready values and back, by their type hints.

Handles what the engine's snapshot is made of: None, bool, int, str, enums,
aware datetimes (RFC 3339), exact fractions, fixed and variable tuples, unions,
and nested frozen dataclasses and NamedTuples (objects of their fields, never
arrays). ``from_jsonable`` checks every value against its type and raises
``SnapshotError`` naming the path of the first one that does not fit.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import datetime
from enum import Enum
from fractions import Fraction
from functools import cache
from typing import Any

from table_controller.engine.errors import SnapshotError

_NONE = type(None)


def to_jsonable(value: object) -> object:
    if value is None or (isinstance(value, bool | int) and not isinstance(value, Enum)):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Fraction):
        # Exact, as the rules profiles' payouts are: "3/2", "-1/2", "10".
        return str(value)
    if isinstance(value, tuple) and _is_record(type(value)):
        return {name: to_jsonable(v) for name, v in zip(_names(type(value)), value, strict=True)}
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    raise TypeError(f"no JSON form for {type(value).__name__}")


@cache
def _hints(cls: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_record(cls: type[Any]) -> bool:
    """A frozen dataclass or a NamedTuple: written as an object of its fields."""
    if issubclass(cls, tuple):
        return hasattr(cls, "_fields")
    return dataclasses.is_dataclass(cls)


def _names(cls: type[Any]) -> tuple[str, ...]:
    if issubclass(cls, tuple):
        names: tuple[str, ...] = getattr(cls, "_fields")  # noqa: B009 (not on tuple's type)
        return names
    return tuple(f.name for f in dataclasses.fields(cls))


def _fail(path: str, expected: str, value: object) -> SnapshotError:
    return SnapshotError(f"{path}: expected {expected}, got {value!r}")


def from_jsonable(tp: Any, value: object, path: str) -> object:
    """``value`` read as type ``tp``; ``SnapshotError`` naming ``path`` if it does not fit."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is _NONE:
        if value is not None:
            raise _fail(path, "null", value)
        return None
    if origin is typing.Union or origin is types.UnionType:
        if value is None and _NONE in args:
            return None
        errors: list[str] = []
        for arg in args:
            if arg is _NONE:
                continue
            try:
                return from_jsonable(arg, value, path)
            except SnapshotError as exc:
                errors.append(str(exc))
        raise SnapshotError("; ".join(errors))
    if origin is typing.Literal:
        if value not in args:
            raise _fail(path, f"one of {args}", value)
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise _fail(path, "a list", value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise _fail(path, f"{len(args)} items", value)
        return tuple(
            from_jsonable(a, v, f"{path}[{i}]")
            for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if tp is bool:
        if type(value) is not bool:
            raise _fail(path, "true or false", value)
        return value
    if tp is int:
        if type(value) is not int:
            raise _fail(path, "an integer", value)
        return value
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            raise _fail(path, f"one of {[m.value for m in tp]}", value) from None
    if tp is str:
        if not isinstance(value, str):
            raise _fail(path, "a string", value)
        return value
    if tp is Fraction:
        if not isinstance(value, str):
            raise _fail(path, "an exact fraction such as '3/2'", value)
        try:
            return Fraction(value)
        except (ValueError, ZeroDivisionError):
            raise _fail(path, "an exact fraction such as '3/2'", value) from None
    if tp is datetime:
        if not isinstance(value, str):
            raise _fail(path, "an RFC 3339 time", value)
        try:
            at = datetime.fromisoformat(value)
        except ValueError:
            raise _fail(path, "an RFC 3339 time", value) from None
        if at.tzinfo is None:
            raise _fail(path, "a time with its offset", value)
        return at
    if isinstance(tp, type) and _is_record(tp):
        if not isinstance(value, dict):
            raise _fail(path, "an object", value)
        hints = _hints(tp)
        names = _names(tp)
        extra = sorted(set(value) - set(names))
        if extra:
            raise SnapshotError(f"{path}.{extra[0]}: not a field")
        missing = [n for n in names if n not in value]
        if missing:
            raise SnapshotError(f"{path}.{missing[0]}: missing")
        return tp(**{n: from_jsonable(hints[n], value[n], f"{path}.{n}") for n in names})
    raise TypeError(f"{path}: no JSON form for {tp!r}")
