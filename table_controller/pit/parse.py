"""Defensive parsing of what tables publish into the pit's views.

The pit reads payloads itself rather than through the feed's strict models: a
table of a newer minor shape, or a broken one, must still show what can be shown,
and anything else is counted (:class:`~.errors.MalformedPayload`), never raised to
the display. Every string is made safe for a terminal before it is kept.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from table_controller.feed.topics import TOPIC_RULES, Topic
from table_controller.pit.errors import MalformedPayload, UnexpectedMessage
from table_controller.pit.views import (
    AlertView,
    DeviceView,
    PositionResult,
    RoundView,
    StateView,
    StatsView,
    StatusView,
)

MAX_PAYLOAD_BYTES = 1 << 20  # a round record is a few kB
MAX_TEXT_CHARS = 160  # any string from a payload, as displayed
MAX_LIST_ITEMS = 16  # positions of a round, devices of a status
MAX_STATS_ITEMS = 48
SUPPORTED_VERSION = "1"

_ENVELOPE = frozenset({"schema", "id", "table", "site", "ts"})
_DEVICE_ORDER = ("shoe", "sensors", "console")

_REPLACED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co"})


def clean(text: str) -> str:
    """A payload string made safe to show: no terminal controls, no bidi tricks, bounded."""
    if len(text) > MAX_TEXT_CHARS:
        text = text[: MAX_TEXT_CHARS - 1] + "…"
    if text.isprintable():
        return text
    return "".join("\ufffd" if unicodedata.category(c) in _REPLACED_CATEGORIES else c for c in text)


def opt_str(d: Mapping[str, Any], key: str) -> str | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return clean(value)
    raise MalformedPayload(f"{key}: expected a string")


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise MalformedPayload(f"{key}: expected an integer")


def _opt_num(d: Mapping[str, Any], key: str) -> float | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise MalformedPayload(f"{key}: expected a number")


def _opt_bool(d: Mapping[str, Any], key: str) -> bool | None:
    value = d.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise MalformedPayload(f"{key}: expected true or false")


def opt_ident(d: Mapping[str, Any], key: str) -> str | None:
    """An identifier given as a string or an integer (round ids, epochs, message ids)."""
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise MalformedPayload(f"{key}: expected an identifier")


def _opt_obj(d: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = d.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise MalformedPayload(f"{key}: expected an object")


def _opt_list(d: Mapping[str, Any], key: str) -> list[Any] | None:
    value = d.get(key)
    if value is None or isinstance(value, list):
        return value
    raise MalformedPayload(f"{key}: expected a list")


def _reject_constant(name: str) -> Any:
    raise MalformedPayload(f"{name} is not JSON")


def decode(payload: bytes) -> dict[str, Any]:
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise MalformedPayload(f"payload of {len(payload)} bytes")
    try:
        # docs/feed.md: JSON payloads, UTF-8. NaN and Infinity are not JSON.
        data = json.loads(payload.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedPayload(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MalformedPayload("not a JSON object")
    return data


def check_schema(d: Mapping[str, Any], kind: str) -> None:
    schema = d.get("schema")
    if not isinstance(schema, str) or "/" not in schema:
        raise MalformedPayload("schema: expected name/version")
    name, _, version = schema.partition("/")
    if name != TOPIC_RULES[Topic(kind)].schema.partition("/")[0]:
        raise MalformedPayload(f"schema {name!r} on the {kind} topic")
    if version != SUPPORTED_VERSION:
        raise UnexpectedMessage(f"schema version {version!r} not known to this pit")


def parse_status(d: Mapping[str, Any]) -> StatusView:
    devices: list[DeviceView] = []
    raw = _opt_obj(d, "devices") or {}
    names = [n for n in _DEVICE_ORDER if n in raw] + sorted(
        n for n in raw if n not in _DEVICE_ORDER
    )
    for name in names[:MAX_LIST_ITEMS]:
        dev = raw[name]
        if not isinstance(dev, dict):
            raise MalformedPayload(f"devices.{name}: expected an object")
        devices.append(DeviceView(clean(name), opt_str(dev, "state"), opt_str(dev, "detail")))
    journal = _opt_obj(d, "journal")
    if journal is not None:
        # Shown beside the devices: a journal that cannot commit stops the table too.
        devices.append(DeviceView("journal", opt_str(journal, "state"), opt_str(journal, "detail")))
    outbox = _opt_obj(d, "outbox") or {}
    return StatusView(
        online=_opt_bool(d, "online"),
        version=opt_str(d, "version"),
        rules=opt_str(d, "rules"),
        decks=_opt_int(d, "decks"),
        positions=_opt_int(d, "positions"),
        devices=tuple(devices),
        outbox_depth=_opt_int(outbox, "depth"),
        outbox_oldest_age_s=_opt_num(outbox, "oldest_age_s"),
        ts=opt_str(d, "ts"),
        instance=opt_ident(d, "instance"),
        started=opt_str(d, "started"),
        currency=opt_str(d, "currency"),
    )


def parse_state(d: Mapping[str, Any]) -> StateView:
    shoe = _opt_obj(d, "shoe") or {}
    positions = d.get("positions")
    if positions is not None and not isinstance(positions, list | dict):
        raise MalformedPayload("positions: expected a list")
    return StateView(
        phase=opt_str(d, "phase"),
        round_id=opt_ident(d, "round_id"),
        held=_opt_bool(d, "held"),
        dealer=opt_str(d, "dealer"),
        shoe_id=opt_ident(shoe, "id"),
        cards_read=_opt_int(shoe, "cards_read"),
        cover_seen=_opt_bool(shoe, "cover_seen"),
        live_positions=None if positions is None else len(positions),
        ts=opt_str(d, "ts"),
    )


def parse_round(d: Mapping[str, Any]) -> RoundView:
    results: list[PositionResult] = []
    for item in (_opt_list(d, "positions") or [])[:MAX_LIST_ITEMS]:
        if not isinstance(item, dict):
            raise MalformedPayload("positions: expected objects")
        results.append(
            PositionResult(
                position=_opt_int(item, "position"),
                card=opt_str(item, "card"),
                outcome=opt_str(item, "outcome"),
                decision=opt_str(item, "decision"),
                war_card=opt_str(item, "war_card"),
                war_outcome=opt_str(item, "war_outcome"),
                net=_opt_int(item, "net"),
            )
        )
    # The record's `cards` list also holds the burn cards' ranks; the pit shows no burn
    # card, so that a display near the table reveals no burn rank (§(h)(1)).
    return RoundView(
        id=opt_ident(d, "id"),
        round_id=opt_ident(d, "round_id"),
        dealer=opt_str(d, "dealer"),
        dealer_card=opt_str(d, "dealer_card"),
        dealer_war_card=opt_str(d, "dealer_war_card"),
        positions=tuple(results),
        net=_opt_int(d, "net"),
        void=bool(_opt_bool(d, "void")),
        void_reason=opt_str(d, "void_reason"),
        ended=opt_str(d, "ended") or opt_str(d, "ts"),
    )


def parse_alert(d: Mapping[str, Any]) -> tuple[AlertView, str | None]:
    alert = opt_ident(d, "alert")
    if alert is None:
        raise MalformedPayload("alert: missing")
    view = AlertView(
        alert=alert,
        code=opt_str(d, "code"),
        severity=opt_str(d, "severity"),
        message=opt_str(d, "message"),
        round_id=opt_ident(d, "round_id"),
        position=_opt_int(d, "position"),
        spot=opt_str(d, "spot"),
        ts=opt_str(d, "ts"),
    )
    return view, opt_str(d, "resolved_by")


@dataclass(frozen=True, slots=True)
class Event:
    epoch: str
    seq: int
    type: str | None
    round_id: str | None
    detail: str | None


def parse_event(d: Mapping[str, Any]) -> Event:
    epoch = opt_ident(d, "epoch")
    seq = _opt_int(d, "seq")
    if epoch is None or seq is None:
        raise MalformedPayload("events need seq and epoch")
    kind = opt_str(d, "type")
    detail: str | None = None
    if kind == "card":
        role = opt_str(d, "role")
        card = opt_str(d, "card")
        position = _opt_int(d, "position")
        # A burn card's rank is never on the live feed (docs/feed.md, §(h)(1)).
        detail = " ".join(
            p for p in (card, role, f"P{position}" if position is not None else None) if p
        )
    elif kind == "dealer_changed":
        detail = opt_str(d, "dealer")
    elif kind == "alert":
        code, resolved_by = opt_str(d, "code"), opt_str(d, "resolved_by")
        detail = f"{code or '?'} resolved by {resolved_by}" if resolved_by else code
    return Event(epoch, seq, kind, opt_ident(d, "round_id"), detail)


Scalar = int | float | str | bool | None


def _stats_value(value: Any) -> tuple[bool, Scalar]:
    if value is None or isinstance(value, bool | int):
        return True, value
    if isinstance(value, float):
        return math.isfinite(value), value
    if isinstance(value, str):
        return True, clean(value)
    return False, None


def parse_stats(d: Mapping[str, Any]) -> StatsView:
    values: list[tuple[str, Scalar]] = []
    groups: list[tuple[str, tuple[tuple[str, Scalar], ...]]] = []
    for key in list(d)[: MAX_STATS_ITEMS + len(_ENVELOPE)]:
        if key in _ENVELOPE:
            continue
        value = d[key]
        if isinstance(value, dict):
            inner = []
            for k, v in list(value.items())[:MAX_STATS_ITEMS]:
                ok, scalar = _stats_value(v)
                if not ok:
                    raise MalformedPayload(f"{key}.{k}: expected a number")
                inner.append((clean(k), scalar))
            groups.append((clean(key), tuple(inner)))
        else:
            ok, scalar = _stats_value(value)
            if ok:
                values.append((clean(key), scalar))
            # A list or other shape a later stats version adds is left out, not an error.
    return StatsView(tuple(values), tuple(groups), opt_str(d, "ts"))
