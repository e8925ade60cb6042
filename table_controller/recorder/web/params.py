"""Query parameters declared once: validated from a request (400 naming the parameter)
and described in the OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from table_controller.recorder.errors import BadParameter
from table_controller.recorder.times import parse_time

# More digits than any bound a parameter has (the feed's largest has 16).
_DIGITS = 20


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: str  # "integer", "boolean", "date-time", "string"
    description: str
    where: str = "query"  # or "path"
    minimum: int | None = None
    maximum: int | None = None

    def parse(self, raw: str) -> Any:
        if self.kind == "integer":
            # ASCII digits only: str.isdigit() takes "²", and int() refuses it.
            digits = raw[1:] if raw.startswith("-") else raw
            if not (digits.isascii() and digits.isdigit()):
                raise BadParameter(self.name, f"{raw!r} is not a whole number")
            if len(digits) > _DIGITS:  # int() itself refuses over 4,300 of them
                raise BadParameter(self.name, f"a whole number of at most {_DIGITS} digits")
            value = int(raw)
            if self.minimum is not None and value < self.minimum:
                raise BadParameter(self.name, f"at least {self.minimum}")
            if self.maximum is not None and value > self.maximum:
                raise BadParameter(self.name, f"at most {self.maximum}")
            return value
        if self.kind == "boolean":
            if raw not in ("true", "false"):
                raise BadParameter(self.name, "true or false")
            return raw == "true"
        if self.kind == "date-time":
            try:
                return parse_time(raw)
            except ValueError as exc:
                raise BadParameter(self.name, str(exc)) from exc
        if not raw:
            raise BadParameter(self.name, "empty")
        return without_nul(self.name, raw)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "in": self.where,
            "required": self.where == "path",
            "description": self.description,
        }
        if self.kind == "date-time":
            out["schema"] = {"type": "string", "format": "date-time"}
        else:
            out["schema"] = {"type": self.kind}
            for key in ("minimum", "maximum"):
                if getattr(self, key) is not None:
                    out["schema"][key] = getattr(self, key)
        return out


def parse_all(
    params: tuple[Param, ...], query: Mapping[str, str], path: Mapping[str, str]
) -> dict[str, Any]:
    """Every declared parameter present, parsed; an undeclared query parameter is refused."""
    known = {p.name for p in params if p.where == "query"}
    for name in query:
        if name not in known:
            raise BadParameter(name, f"unknown parameter; use {', '.join(sorted(known)) or 'none'}")
    out: dict[str, Any] = {}
    for p in params:
        source = path if p.where == "path" else query
        if p.name in source:
            out[p.name] = p.parse(source[p.name])
    return out


@dataclass(frozen=True, slots=True)
class Endpoint:
    path: str
    summary: str
    params: tuple[Param, ...]
    handler: Callable[..., Any]
    media: str = "application/json"

    def operation(self) -> dict[str, Any]:
        responses: dict[str, Any] = {
            "200": {"description": "OK", "content": {self.media: {}}},
            "400": {"description": "a bad parameter, named in the message"},
        }
        if any(p.where == "path" for p in self.params):
            responses["404"] = {"description": "unknown table or round"}
        return {
            "summary": self.summary,
            "parameters": [p.schema() for p in self.params],
            "responses": responses,
        }


def openapi(endpoints: tuple[Endpoint, ...], *, title: str, version: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for e in endpoints:
        paths.setdefault(e.path, {})["get"] = e.operation()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Amounts are integer cents; times RFC 3339 UTC.",
        },
        "paths": paths,
    }


def without_nul(name: str, raw: str) -> str:
    """``raw``, or BadParameter: PostgreSQL's text cannot hold a NUL, so an address that
    holds one is refused before any query, on every database alike."""
    if "\x00" in raw:
        raise BadParameter(name, "a NUL character is not allowed")
    return raw
