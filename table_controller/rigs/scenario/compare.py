"""Comparing what a scenario expects with what the controller published, in words.

Every difference reads ``field: expected X, saw Y``, so that a failure report
says what was seen instead.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from table_controller.rigs.scenario.expect import (
    AlertExpect,
    CardExpect,
    PositionExpect,
    RoundExpect,
)

WAGER_SPOTS: Final = ("initial", "tie", "war", "war_tie")


def show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
    return str(value)


def equal(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    if isinstance(want, int | float) and isinstance(got, int | float):
        return float(want) == float(got)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(equal(w, g) for w, g in zip(want, got, strict=True))
    return bool(want == got)


def same(path: str, want: Any, got: Any, diffs: list[str]) -> None:
    if not equal(want, got):
        diffs.append(f"{path}: expected {show(want)}, saw {show(got)}")


def _card_line(card: Any, role: Any, position: Any, source: Any) -> str:
    text = f"{card or '-'} {show(role)}"
    if position is not None:
        text += f" {position}"
    if source == "manual":
        text += " manual"
    return text


def _diff_cards(want: list[CardExpect], got: list[dict[str, Any]], diffs: list[str]) -> None:
    same = len(want) == len(got) and all(
        all(equal(v, g.get(k)) for k, v in w.given().items())
        for w, g in zip(want, got, strict=True)
    )
    if same:
        return
    expected = [_card_line(w.card, w.role, w.position, w.source) for w in want]
    seen = [_card_line(g["card"], g["role"], g["position"], g["source"]) for g in got]
    first = next(
        (i for i, (w, g) in enumerate(zip(expected, seen, strict=False)) if w != g),
        min(len(expected), len(seen)),
    )
    diffs.append(
        f"cards: first difference at card {first + 1}: expected [{', '.join(expected)}], "
        f"saw [{', '.join(seen)}]"
    )


def _wager_line(w: dict[str, Any]) -> str:
    return f"{w['result']} {show(w['net'])}"


def _diff_positions(
    want: dict[int, PositionExpect | None], got: list[dict[str, Any]], diffs: list[str]
) -> None:
    by_position = {p["position"]: p for p in got}
    for pos, expect in want.items():
        seen = by_position.get(pos)
        path = f"positions.{pos}"
        if expect is None:
            if seen is not None:
                diffs.append(f"{path}: expected no such position, saw it (net {show(seen['net'])})")
            continue
        if seen is None:
            diffs.append(f"{path}: not in the record (positions {sorted(by_position)})")
            continue
        wagers = {w["spot"]: w for w in seen["wagers"]}
        for name, value in expect.given().items():
            if name not in WAGER_SPOTS:
                same(f"{path}.{name}", value, seen.get(name), diffs)
                continue
            wager = wagers.get(name)
            if value is None:
                if wager is not None:
                    diffs.append(f"{path}.{name}: expected no such wager, saw {_wager_line(wager)}")
            elif wager is None:
                diffs.append(
                    f"{path}.{name}: no such wager (wagers: {', '.join(wagers) or 'none'})"
                )
            else:
                for key, v in value.given().items():
                    same(f"{path}.{name}.{key}", v, wager.get(key), diffs)


def diff_round(expect: RoundExpect, record: dict[str, Any], codes: dict[str, str]) -> list[str]:
    diffs: list[str] = []
    for name, want in expect.given().items():
        if name == "cards":
            _diff_cards(want, record.get("cards", []), diffs)
        elif name == "positions":
            _diff_positions(want, record.get("positions", []), diffs)
        elif name == "alerts":
            seen = sorted(codes.get(a, f"unknown alert {a}") for a in record.get("alerts", []))
            expected = sorted(c.value for c in want)
            if seen != expected:
                diffs.append(f"alerts: expected {show(expected)}, saw {show(seen)}")
        else:
            same(name, want, record.get(name), diffs)
    return diffs


def alert_matches(expect: AlertExpect, alert: dict[str, Any]) -> bool:
    given = expect.given()
    given.setdefault("resolved_by", None)
    for key, want in given.items():
        if key == "message":
            if want not in str(alert.get("message", "")):
                return False
        elif key not in alert or not equal(want, alert[key]):
            return False
    return True


def alert_line(alert: dict[str, Any]) -> str:
    text = f"{alert['code']} ({alert['severity']}"
    if alert.get("position") is not None:
        text += f", P{alert['position']}"
    if alert.get("spot") is not None:
        text += f" {alert['spot']}"
    resolved = alert.get("resolved_by")
    return text + (f", resolved by {resolved})" if resolved else ", raised)")


def event_line(event: dict[str, Any]) -> str:
    skip = {"schema", "id", "table", "site", "ts", "seq", "epoch", "type"}
    fields = ", ".join(f"{k}: {show(v)}" for k, v in event.items() if k not in skip)
    return f"{event['type']} {{{fields}}}"
