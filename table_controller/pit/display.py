"""The pit display: every table of a site at a glance, for supervisors.

``table-controller pit --broker URL [--site S]`` subscribes, read only, to what
the tables publish (``../shared/spec/MQTT.md``) and shows per table: online or
offline (the retained ``status``, including the last will ``online: false``),
device states, outbox depth, phase, round, dealer, hold, the last round
results, open alerts and statistics.

Three parts, kept apart so each can be tested and reused on its own:

- :class:`PitModel` is pure: it takes ``(topic, payload bytes)`` and keeps a
  read-only :class:`TableView` per table. It parses every payload itself,
  defensively: a malformed or unexpected message is counted, never raised.
  Duplicates (same ``id``; delivery is at least once) are dropped and counted;
  on the retained topics only a repeat of the value shown now is a duplicate,
  because the broker holds the last one published. Gaps in the ``events``
  ``seq`` per (table, epoch) are counted, and a late event fills its gap.
  Critical alerts stay open until a message for the same ``alert`` carries
  ``resolved_by``; warnings and info need no answer (GAME.md), so they are
  listed as the last few notices.
- :func:`render` turns a model into a ``rich`` renderable, with no terminal.
- :func:`watch` connects (aiomqtt, MQTT 5, or 3.1.1 for a broker without 5),
  feeds the model and keeps a ``rich.live.Live`` view current; the demo runs
  it in-process. It never publishes.

Alerts are not retained: a pit started after an alert was raised does not see
it, though the table's retained ``state`` still shows the round ``held``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import random
import re
import secrets
import signal
import ssl
import string
import sys
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode
from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from table_controller.feed.broker import (
    BrokerConfigError as PublisherConfigError,
)
from table_controller.feed.broker import (
    parse_broker_url,
    read_password,
    tls_context,
)

__all__ = [
    "DEFAULT_PREFIX",
    "AlertView",
    "BrokerLink",
    "BrokerSettings",
    "ConnectionView",
    "DeviceView",
    "EventsView",
    "Link",
    "PitConfigError",
    "PitConnectError",
    "PitModel",
    "PositionResult",
    "Protocol",
    "RoundView",
    "StateView",
    "StatsView",
    "StatusView",
    "SubscriptionRefused",
    "TableKey",
    "TableView",
    "broker_settings",
    "configure",
    "read_password_file",
    "render",
    "run",
    "subscription_filter",
    "subscription_refusal",
    "watch",
]

log = logging.getLogger(__name__)

DEFAULT_PREFIX = "casino/{site}/table/{table}"
DEFAULT_BROKER = "mqtt://127.0.0.1:1883"

ROUNDS_KEPT = 5  # round results shown per table
NOTICES_KEPT = 5  # warnings and info alerts shown per table
MAX_OPEN_ALERTS = 256  # per table; more is abuse, not play
MAX_TABLES = 512  # a rogue publisher under the wildcard cannot grow memory without bound
MAX_PAYLOAD_BYTES = 1 << 20  # a round record is a few kB
MAX_TEXT_CHARS = 160  # any string from a payload, as displayed
MAX_LIST_ITEMS = 16  # positions of a round, devices of a status
MAX_STATS_ITEMS = 48
SEEN_IDS_KEPT = 100_000  # ids remembered for dropping duplicates (an outbox backlog resent)
RESOLVED_ALERTS_KEPT = 1024  # per table: a raise arriving after its resolution stays closed
MISSING_SEQS_KEPT = 4096  # per epoch: missing seqs remembered so a late arrival fills its gap
EPOCHS_KEPT = 8  # per table

SUPPORTED_VERSION = "1"
ONCE_SETTLE_S = 1.0  # --once: retained messages arrive right after the subscription
REFRESH_INTERVAL_S = 0.25  # the live view redraws at most this often
RECONNECT_MIN_S = 0.5
RECONNECT_MAX_S = 30.0
KEEPALIVE_S = 15
MAX_QUEUED_MESSAGES = 10_000

_ENVELOPE = frozenset({"schema", "id", "table", "site", "ts"})
_TOPIC_SCHEMAS = {
    "status": "table-status",
    "state": "table-state",
    "events": "table-event",
    "rounds": "war-round",
    "alerts": "table-alert",
    "stats": "table-stats",
}
_RETAINED = frozenset({"status", "state", "stats"})
_DEVICE_ORDER = ("shoe", "sensors", "console")
# Only critical alerts wait for an answer (GAME.md: "warnings and info need no answer").
_NOTICE_SEVERITIES = frozenset({"warning", "info"})


# --------------------------------------------------------------------------- errors


class PitConfigError(ValueError):
    """The pit cannot start with these options: fix the option the message names."""


class PitConnectError(ConnectionError):
    """The broker could not be reached or refused the pit: retry, or check the credentials."""


class _Malformed(ValueError):
    """A payload that does not fit MQTT.md: counted as malformed."""


class _Unexpected(ValueError):
    """A message the pit does not know (topic, schema version): counted as unexpected."""


# --------------------------------------------------------------------------- views


class Link(StrEnum):
    """A table's connection as its retained ``status`` tells it."""

    ONLINE = "online"
    OFFLINE = "offline"
    UNKNOWN = "unknown"


class BrokerLink(StrEnum):
    """The pit's own connection to the broker."""

    IDLE = "idle"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RETRYING = "retrying"


@dataclass(frozen=True, slots=True, order=True)
class TableKey:
    site: str
    table: str

    def __str__(self) -> str:
        return f"{self.site}/{self.table}" if self.site else self.table


@dataclass(frozen=True, slots=True)
class DeviceView:
    name: str
    state: str | None
    detail: str | None


@dataclass(frozen=True, slots=True)
class StatusView:
    online: bool | None
    version: str | None
    rules: str | None
    decks: int | None
    positions: int | None
    devices: tuple[DeviceView, ...]
    outbox_depth: int | None
    outbox_oldest_age_s: float | None
    ts: str | None


@dataclass(frozen=True, slots=True)
class StateView:
    phase: str | None
    round_id: str | None
    held: bool | None
    dealer: str | None
    shoe_id: str | None
    cards_read: int | None
    cover_seen: bool | None
    live_positions: int | None
    ts: str | None


@dataclass(frozen=True, slots=True)
class PositionResult:
    position: int | None
    card: str | None
    outcome: str | None
    decision: str | None
    war_card: str | None
    war_outcome: str | None
    net: int | None


@dataclass(frozen=True, slots=True)
class RoundView:
    id: str | None
    round_id: str | None
    dealer: str | None
    dealer_card: str | None
    dealer_war_card: str | None
    positions: tuple[PositionResult, ...]
    net: int | None
    void: bool
    void_reason: str | None
    ended: str | None


@dataclass(frozen=True, slots=True)
class AlertView:
    alert: str
    code: str | None
    severity: str | None
    message: str | None
    round_id: str | None
    position: int | None
    spot: str | None
    ts: str | None

    @property
    def critical(self) -> bool:
        return self.severity == "critical"

    @property
    def needs_answer(self) -> bool:
        """Open until resolved: critical alerts, and any severity the pit does not know."""
        return self.severity not in _NOTICE_SEVERITIES


@dataclass(frozen=True, slots=True)
class StatsView:
    values: tuple[tuple[str, int | float | str | bool | None], ...]
    groups: tuple[tuple[str, tuple[tuple[str, int | float | str | bool | None], ...]], ...]
    ts: str | None


@dataclass(frozen=True, slots=True)
class EventsView:
    epoch: str | None = None
    last_seq: int | None = None
    last_type: str | None = None
    last_round_id: str | None = None
    last_detail: str | None = None
    missing: int = 0  # events never seen between the first and the last seen, per epoch
    out_of_order: int = 0  # events below what was already seen that filled no gap
    received: int = 0


@dataclass(frozen=True, slots=True)
class TableView:
    key: TableKey
    status: StatusView | None = None
    state: StateView | None = None
    rounds: tuple[RoundView, ...] = ()  # newest first
    open_alerts: tuple[AlertView, ...] = ()  # in the order raised
    notices: tuple[AlertView, ...] = ()  # newest first
    stats: StatsView | None = None
    events: EventsView = EventsView()
    messages: int = 0
    duplicates: int = 0
    malformed: int = 0
    unexpected: int = 0

    @property
    def link(self) -> Link:
        if self.status is None or self.status.online is None:
            return Link.UNKNOWN
        return Link.ONLINE if self.status.online else Link.OFFLINE

    @property
    def critical_open(self) -> int:
        return sum(1 for a in self.open_alerts if a.critical)


@dataclass(frozen=True, slots=True)
class ConnectionView:
    state: BrokerLink = BrokerLink.IDLE
    broker: str | None = None
    detail: str | None = None


# --------------------------------------------------------------------------- topics


def _check_site(site: str | None) -> None:
    if site is not None and (not site or any(c in site for c in "/+#")):
        raise PitConfigError(f"--site {site!r}: one whole topic level, no '/', '+' or '#'")


def _levels(prefix: str) -> list[list[tuple[str, str | None]]]:
    """Each topic level of the prefix as (literal, field) pieces; fields are site and table."""
    if not prefix or prefix.startswith("/") or prefix.endswith("/") or "#" in prefix:
        raise PitConfigError(f"--prefix {prefix!r}: levels separated by '/', no '#'")
    levels: list[list[tuple[str, str | None]]] = []
    tables = 0
    for level in prefix.split("/"):
        try:
            pieces = [(literal, name) for literal, name, _, _ in string.Formatter().parse(level)]
        except ValueError as exc:
            raise PitConfigError(f"--prefix {prefix!r}: {exc}") from None
        for literal, name in pieces:
            if name is not None and name not in ("site", "table"):
                raise PitConfigError(f"--prefix {prefix!r}: only {{site}} and {{table}} allowed")
            if "+" in literal and level != "+":
                raise PitConfigError(f"--prefix {prefix!r}: '+' must be a whole level")
            tables += name == "table"
        levels.append(pieces)
    if tables != 1:
        raise PitConfigError(f"--prefix {prefix!r}: must contain {{table}} exactly once")
    return levels


def subscription_filter(prefix: str = DEFAULT_PREFIX, site: str | None = None) -> str:
    """The topic filter for every table under ``prefix`` (of ``site`` when given)."""
    _check_site(site)
    out: list[str] = []
    for pieces in _levels(prefix):
        names = {name for _, name in pieces if name is not None}
        if "table" in names or ("site" in names and site is None):
            out.append("+")  # an MQTT wildcard is a whole level; the regex checks the rest
        else:
            out.append(
                "".join(lit + (site if name == "site" and site else "") for lit, name in pieces)
            )
    return "/".join(out) + "/#"


def _topic_regex(prefix: str, site: str | None) -> re.Pattern[str]:
    parts: list[str] = []
    site_seen = False
    for pieces in _levels(prefix):
        if len(pieces) == 1 and pieces[0] == ("+", None):
            parts.append("[^/]+")
            continue
        level = ""
        for literal, name in pieces:
            level += re.escape(literal)
            if name == "table":
                level += "(?P<table>[^/]+)"
            elif name == "site" and site is not None:
                level += re.escape(site)
            elif name == "site" and not site_seen:
                level += "(?P<site>[^/]+)"
                site_seen = True
            elif name == "site":
                level += "(?P=site)"
        parts.append(level)
    return re.compile("/".join(parts) + "/(?P<kind>.+)")


# --------------------------------------------------------------------------- parsing


_REPLACED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co"})


def _clean(text: str) -> str:
    """A payload string made safe to show: no terminal controls, no bidi tricks, bounded."""
    if len(text) > MAX_TEXT_CHARS:
        text = text[: MAX_TEXT_CHARS - 1] + "…"
    if text.isprintable():
        return text
    return "".join("\ufffd" if unicodedata.category(c) in _REPLACED_CATEGORIES else c for c in text)


def _opt_str(d: Mapping[str, Any], key: str) -> str | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return _clean(value)
    raise _Malformed(f"{key}: expected a string")


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _Malformed(f"{key}: expected an integer")


def _opt_num(d: Mapping[str, Any], key: str) -> float | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise _Malformed(f"{key}: expected a number")


def _opt_bool(d: Mapping[str, Any], key: str) -> bool | None:
    value = d.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise _Malformed(f"{key}: expected true or false")


def _opt_ident(d: Mapping[str, Any], key: str) -> str | None:
    """An identifier given as a string or an integer (round ids, epochs, message ids)."""
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _Malformed(f"{key}: expected an identifier")


def _opt_obj(d: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = d.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise _Malformed(f"{key}: expected an object")


def _opt_list(d: Mapping[str, Any], key: str) -> list[Any] | None:
    value = d.get(key)
    if value is None or isinstance(value, list):
        return value
    raise _Malformed(f"{key}: expected a list")


def _reject_constant(name: str) -> Any:
    raise _Malformed(f"{name} is not JSON")


def _decode(payload: bytes) -> dict[str, Any]:
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise _Malformed(f"payload of {len(payload)} bytes")
    try:
        # MQTT.md: JSON payloads, UTF-8. NaN and Infinity are not JSON.
        data = json.loads(payload.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _Malformed(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _Malformed("not a JSON object")
    return data


def _check_schema(d: Mapping[str, Any], kind: str) -> None:
    schema = d.get("schema")
    if not isinstance(schema, str) or "/" not in schema:
        raise _Malformed("schema: expected name/version")
    name, _, version = schema.partition("/")
    if name != _TOPIC_SCHEMAS[kind]:
        raise _Malformed(f"schema {name!r} on the {kind} topic")
    if version != SUPPORTED_VERSION:
        raise _Unexpected(f"schema version {version!r} not known to this pit")


def _parse_status(d: Mapping[str, Any]) -> StatusView:
    devices: list[DeviceView] = []
    raw = _opt_obj(d, "devices") or {}
    names = [n for n in _DEVICE_ORDER if n in raw] + sorted(
        n for n in raw if n not in _DEVICE_ORDER
    )
    for name in names[:MAX_LIST_ITEMS]:
        dev = raw[name]
        if not isinstance(dev, dict):
            raise _Malformed(f"devices.{name}: expected an object")
        devices.append(DeviceView(_clean(name), _opt_str(dev, "state"), _opt_str(dev, "detail")))
    outbox = _opt_obj(d, "outbox") or {}
    return StatusView(
        online=_opt_bool(d, "online"),
        version=_opt_str(d, "version"),
        rules=_opt_str(d, "rules"),
        decks=_opt_int(d, "decks"),
        positions=_opt_int(d, "positions"),
        devices=tuple(devices),
        outbox_depth=_opt_int(outbox, "depth"),
        outbox_oldest_age_s=_opt_num(outbox, "oldest_age_s"),
        ts=_opt_str(d, "ts"),
    )


def _parse_state(d: Mapping[str, Any]) -> StateView:
    shoe = _opt_obj(d, "shoe") or {}
    positions = d.get("positions")
    if positions is not None and not isinstance(positions, list | dict):
        raise _Malformed("positions: expected a list")
    return StateView(
        phase=_opt_str(d, "phase"),
        round_id=_opt_ident(d, "round_id"),
        held=_opt_bool(d, "held"),
        dealer=_opt_str(d, "dealer"),
        shoe_id=_opt_ident(shoe, "id"),
        cards_read=_opt_int(shoe, "cards_read"),
        cover_seen=_opt_bool(shoe, "cover_seen"),
        live_positions=None if positions is None else len(positions),
        ts=_opt_str(d, "ts"),
    )


def _parse_round(d: Mapping[str, Any]) -> RoundView:
    results: list[PositionResult] = []
    for item in (_opt_list(d, "positions") or [])[:MAX_LIST_ITEMS]:
        if not isinstance(item, dict):
            raise _Malformed("positions: expected objects")
        results.append(
            PositionResult(
                position=_opt_int(item, "position"),
                card=_opt_str(item, "card"),
                outcome=_opt_str(item, "outcome"),
                decision=_opt_str(item, "decision"),
                war_card=_opt_str(item, "war_card"),
                war_outcome=_opt_str(item, "war_outcome"),
                net=_opt_int(item, "net"),
            )
        )
    # The record's `cards` list also holds the burn cards' ranks; the pit shows no burn
    # card, so that a display near the table reveals no burn rank (§(h)(1)).
    return RoundView(
        id=_opt_ident(d, "id"),
        round_id=_opt_ident(d, "round_id"),
        dealer=_opt_str(d, "dealer"),
        dealer_card=_opt_str(d, "dealer_card"),
        dealer_war_card=_opt_str(d, "dealer_war_card"),
        positions=tuple(results),
        net=_opt_int(d, "net"),
        void=bool(_opt_bool(d, "void")),
        void_reason=_opt_str(d, "void_reason"),
        ended=_opt_str(d, "ended") or _opt_str(d, "ts"),
    )


def _parse_alert(d: Mapping[str, Any]) -> tuple[AlertView, str | None]:
    alert = _opt_ident(d, "alert")
    if alert is None:
        raise _Malformed("alert: missing")
    view = AlertView(
        alert=alert,
        code=_opt_str(d, "code"),
        severity=_opt_str(d, "severity"),
        message=_opt_str(d, "message"),
        round_id=_opt_ident(d, "round_id"),
        position=_opt_int(d, "position"),
        spot=_opt_str(d, "spot"),
        ts=_opt_str(d, "ts"),
    )
    return view, _opt_str(d, "resolved_by")


@dataclass(frozen=True, slots=True)
class _Event:
    epoch: str
    seq: int
    type: str | None
    round_id: str | None
    detail: str | None


def _parse_event(d: Mapping[str, Any]) -> _Event:
    epoch = _opt_ident(d, "epoch")
    seq = _opt_int(d, "seq")
    if epoch is None or seq is None:
        raise _Malformed("events need seq and epoch")
    kind = _opt_str(d, "type")
    detail: str | None = None
    if kind == "card":
        role = _opt_str(d, "role")
        card = _opt_str(d, "card")
        position = _opt_int(d, "position")
        # A burn card's rank is never on the live feed (MQTT.md, §(h)(1)).
        detail = " ".join(
            p for p in (card, role, f"P{position}" if position is not None else None) if p
        )
    elif kind == "dealer_changed":
        detail = _opt_str(d, "dealer")
    elif kind == "alert":
        code, resolved_by = _opt_str(d, "code"), _opt_str(d, "resolved_by")
        detail = f"{code or '?'} resolved by {resolved_by}" if resolved_by else code
    return _Event(epoch, seq, kind, _opt_ident(d, "round_id"), detail)


_Scalar = int | float | str | bool | None


def _stats_value(value: Any) -> tuple[bool, _Scalar]:
    if value is None or isinstance(value, bool | int):
        return True, value
    if isinstance(value, float):
        return math.isfinite(value), value
    if isinstance(value, str):
        return True, _clean(value)
    return False, None


def _parse_stats(d: Mapping[str, Any]) -> StatsView:
    values: list[tuple[str, _Scalar]] = []
    groups: list[tuple[str, tuple[tuple[str, _Scalar], ...]]] = []
    for key in list(d)[: MAX_STATS_ITEMS + len(_ENVELOPE)]:
        if key in _ENVELOPE:
            continue
        value = d[key]
        if isinstance(value, dict):
            inner = []
            for k, v in list(value.items())[:MAX_STATS_ITEMS]:
                ok, scalar = _stats_value(v)
                if not ok:
                    raise _Malformed(f"{key}.{k}: expected a number")
                inner.append((_clean(k), scalar))
            groups.append((_clean(key), tuple(inner)))
        else:
            ok, scalar = _stats_value(value)
            if ok:
                values.append((_clean(key), scalar))
            # A list or other shape a later stats version adds is left out, not an error.
    return StatsView(tuple(values), tuple(groups), _opt_str(d, "ts"))


# --------------------------------------------------------------------------- model


class _Epoch:
    """Sequence bookkeeping of one journal epoch of one table."""

    __slots__ = ("last", "missing")

    def __init__(self, seq: int) -> None:
        self.last = seq
        self.missing: set[int] = set()


class _Books:
    """Mutable bookkeeping behind one table's view."""

    __slots__ = ("epochs", "resolved", "shown_ids")

    def __init__(self) -> None:
        self.epochs: OrderedDict[str, _Epoch] = OrderedDict()
        self.resolved: OrderedDict[str, None] = OrderedDict()
        self.shown_ids: dict[str, str | None] = {}  # retained topic -> id of the value shown


@dataclass(slots=True)
class _Counters:
    messages: int = 0
    accepted: int = 0
    duplicates: int = 0
    malformed: int = 0
    unexpected: int = 0
    internal_errors: int = 0


class PitModel:
    """Every table seen under a prefix, built from ``(topic, payload)`` alone.

    Pure and synchronous: no I/O, no clock. ``feed`` never raises on any topic or
    payload; what it cannot use it counts (``malformed``: not valid for MQTT.md;
    ``unexpected``: a topic, table or schema version it does not know).
    """

    def __init__(
        self,
        prefix: str = DEFAULT_PREFIX,
        site: str | None = None,
        *,
        rounds_kept: int = ROUNDS_KEPT,
        notices_kept: int = NOTICES_KEPT,
    ) -> None:
        _check_site(site)
        self.prefix = prefix
        self.site = site
        self.subscription = subscription_filter(prefix, site)
        self._regex = _topic_regex(prefix, site)
        self._rounds_kept = max(1, rounds_kept)
        self._notices_kept = max(1, notices_kept)
        self._tables: dict[TableKey, TableView] = {}
        self._books: dict[TableKey, _Books] = {}
        self._seen: OrderedDict[tuple[TableKey, str, str], None] = OrderedDict()
        self._counters = _Counters()
        self.connection = ConnectionView()
        self.version = 0  # +1 on every change worth redrawing

    # ---- read side

    @property
    def tables(self) -> list[TableView]:
        return [self._tables[k] for k in sorted(self._tables)]

    def table(self, table: str, site: str | None = None) -> TableView | None:
        """The view of ``table`` (of ``site``, or of the pit's site, or of any site)."""
        site = site if site is not None else self.site
        for key, view in sorted(self._tables.items()):
            if key.table == table and (site is None or key.site == site):
                return view
        return None

    @property
    def messages(self) -> int:
        return self._counters.messages

    @property
    def accepted(self) -> int:
        return self._counters.accepted

    @property
    def duplicates(self) -> int:
        return self._counters.duplicates

    @property
    def malformed(self) -> int:
        return self._counters.malformed

    @property
    def unexpected(self) -> int:
        return self._counters.unexpected

    @property
    def internal_errors(self) -> int:
        return self._counters.internal_errors

    # ---- write side

    def set_connection(self, state: BrokerLink, broker: str | None, detail: str | None) -> None:
        self.connection = ConnectionView(state, broker, _clean(detail) if detail else None)
        self.version += 1

    def note_internal_error(self) -> None:
        """A message the model failed on; :func:`watch` counts it instead of dying."""
        self._counters.internal_errors += 1
        self.version += 1

    def feed(self, topic: str, payload: bytes) -> bool:
        """Take one message; True if it changed a view, False if counted and dropped."""
        c = self._counters
        c.messages += 1
        self.version += 1
        match = self._regex.fullmatch(topic)
        if match is None:
            c.unexpected += 1
            return False
        site = match.groupdict().get("site") or self.site or ""
        key = TableKey(site, match["table"])
        kind = match["kind"]
        view = self._tables.get(key)
        if view is None:
            if len(self._tables) >= MAX_TABLES:
                c.unexpected += 1
                return False
            view = TableView(key)
        view = replace(view, messages=view.messages + 1)
        try:
            changed = self._apply(key, view, kind, payload)
        except _Malformed:
            c.malformed += 1
            self._tables[key] = replace(view, malformed=view.malformed + 1)
            return False
        except _Unexpected:
            c.unexpected += 1
            self._tables[key] = replace(view, unexpected=view.unexpected + 1)
            return False
        if changed is None:
            c.duplicates += 1
            self._tables[key] = replace(view, duplicates=view.duplicates + 1)
            return False
        c.accepted += 1
        self._tables[key] = changed
        return True

    def _apply(self, key: TableKey, view: TableView, kind: str, payload: bytes) -> TableView | None:
        """The table's new view, or None for a duplicate."""
        if kind not in _TOPIC_SCHEMAS:
            raise _Unexpected(f"topic {kind!r}")
        if not payload and kind in _RETAINED:
            # A zero-length retained message clears the topic (MQTT): nothing to show.
            self._books_of(key).shown_ids.pop(kind, None)
            if kind == "status":
                return replace(view, status=None)
            if kind == "state":
                return replace(view, state=None)
            return replace(view, stats=None)
        d = _decode(payload)
        _check_schema(d, kind)
        table, site = _opt_str(d, "table"), _opt_str(d, "site")
        if table is not None and table != key.table:
            raise _Malformed(f"payload of table {table!r} on the topic of {key.table!r}")
        if site is not None and key.site and site != key.site:
            raise _Malformed(f"payload of site {site!r} on the topic of {key.site!r}")
        msg_id = _opt_ident(d, "id")
        # Parse everything before remembering the id, so that a bad message does not
        # make its good resend look like a duplicate.
        if kind == "status":
            status = _parse_status(d)
            return replace(view, status=status) if self._new_value(key, kind, msg_id) else None
        if kind == "state":
            state = _parse_state(d)
            return replace(view, state=state) if self._new_value(key, kind, msg_id) else None
        if kind == "stats":
            stats = _parse_stats(d)
            return replace(view, stats=stats) if self._new_value(key, kind, msg_id) else None
        if kind == "rounds":
            record = _parse_round(d)
            if not self._unseen(key, kind, msg_id):
                return None
            return replace(view, rounds=(record, *view.rounds)[: self._rounds_kept])
        if kind == "alerts":
            alert, resolved_by = _parse_alert(d)
            if not self._unseen(key, kind, msg_id):
                return None
            return self._apply_alert(key, view, alert, resolved_by)
        event = _parse_event(d)
        if not self._unseen(key, kind, msg_id):
            return None
        return replace(view, events=self._apply_event(key, view.events, event))

    def _new_value(self, key: TableKey, kind: str, msg_id: str | None) -> bool:
        """For a retained topic, only a repeat of the value shown now is a duplicate.

        The broker keeps the last message published, whatever its age: an older
        status sent again after the last will (an outbox resend) is again what the
        broker holds, and it comes from a table that is connected, so it is shown.
        """
        shown = self._books_of(key).shown_ids
        if msg_id is not None and shown.get(kind) == msg_id:
            return False
        shown[kind] = msg_id
        return True

    def _unseen(self, key: TableKey, kind: str, msg_id: str | None) -> bool:
        """True the first time an id is seen (delivery is at least once: MQTT.md)."""
        if msg_id is None:
            return True
        mark = (key, kind, msg_id)
        if mark in self._seen:
            self._seen.move_to_end(mark)
            return False
        self._seen[mark] = None
        if len(self._seen) > SEEN_IDS_KEPT:
            self._seen.popitem(last=False)
        return True

    def _books_of(self, key: TableKey) -> _Books:
        books = self._books.get(key)
        if books is None:
            books = self._books[key] = _Books()
        return books

    def _apply_alert(
        self, key: TableKey, view: TableView, alert: AlertView, resolved_by: str | None
    ) -> TableView:
        books = self._books_of(key)
        open_alerts = [a for a in view.open_alerts if a.alert != alert.alert]
        notices = [a for a in view.notices if a.alert != alert.alert]
        if resolved_by is not None:
            # MQTT.md: a second message for the same `alert` carries how it was resolved.
            books.resolved[alert.alert] = None
            if len(books.resolved) > RESOLVED_ALERTS_KEPT:
                books.resolved.popitem(last=False)
        elif alert.alert in books.resolved:
            return view  # a raise that arrived after its resolution stays closed
        elif alert.needs_answer:
            previous = next((a for a in view.open_alerts if a.alert == alert.alert), None)
            if previous is not None:
                # The same alert raised again keeps its place in the list.
                open_alerts = [alert if a is previous else a for a in view.open_alerts]
            elif len(open_alerts) >= MAX_OPEN_ALERTS:
                raise _Unexpected("too many open alerts")
            else:
                open_alerts.append(alert)
        else:
            notices.insert(0, alert)
        return replace(
            view, open_alerts=tuple(open_alerts), notices=tuple(notices[: self._notices_kept])
        )

    def _apply_event(self, key: TableKey, events: EventsView, event: _Event) -> EventsView:
        books = self._books_of(key)
        epoch = books.epochs.get(event.epoch)
        missing, out_of_order = events.missing, events.out_of_order
        latest = True
        if epoch is None:
            # The first event seen of an epoch is where this pit starts counting: a pit
            # started late, or a new journal (MQTT.md: a new journal, a new epoch).
            books.epochs[event.epoch] = _Epoch(event.seq)
            if len(books.epochs) > EPOCHS_KEPT:
                books.epochs.popitem(last=False)
        else:
            books.epochs.move_to_end(event.epoch)
            if event.seq > epoch.last:
                skipped = event.seq - epoch.last - 1
                missing += skipped
                if skipped and len(epoch.missing) + skipped <= MISSING_SEQS_KEPT:
                    epoch.missing.update(range(epoch.last + 1, event.seq))
                epoch.last = event.seq
            elif event.seq in epoch.missing:
                epoch.missing.discard(event.seq)  # late, but it fills its gap
                missing -= 1
                latest = False
            else:
                out_of_order += 1
                latest = False
        if not latest:
            return replace(
                events, missing=missing, out_of_order=out_of_order, received=events.received + 1
            )
        return EventsView(
            epoch=event.epoch,
            last_seq=event.seq,
            last_type=event.type,
            last_round_id=event.round_id,
            last_detail=event.detail,
            missing=missing,
            out_of_order=out_of_order,
            received=events.received + 1,
        )


# --------------------------------------------------------------------------- rendering


_DEVICE_STYLES = {"ok": "green", "offline": "bold red", "fault": "bold red"}
_OUTCOME_STYLES = {"win": "green", "lose": "red", "tie": "yellow"}
_DASH = "–"


def _money(cents: int | None) -> str:
    if cents is None:
        return _DASH
    sign = "+" if cents > 0 else "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{part:02d}"


def _money_style(cents: int | None) -> str:
    if cents is None or cents == 0:
        return ""
    return "green" if cents > 0 else "red"


def _txt(value: object, style: str = "") -> Text:
    if value is None:
        return Text(_DASH, style="dim")
    return Text(str(value), style=style)


def _link_text(view: TableView) -> Text:
    return {
        Link.ONLINE: Text("ONLINE", style="bold green"),
        Link.OFFLINE: Text("OFFLINE", style="bold white on red"),
        Link.UNKNOWN: Text("?", style="dim"),
    }[view.link]


def _devices_text(view: TableView) -> Text:
    """``ok`` when every device is, else the devices that are not, by name."""
    if view.status is None or not view.status.devices:
        return _txt(None)
    # A device state from an offline table is only its last known one.
    stale = view.link is Link.OFFLINE
    troubled = [d for d in view.status.devices if d.state != "ok"]
    if not troubled:
        return Text("ok", style="dim" if stale else "green")
    text = Text()
    for n, dev in enumerate(troubled):
        if n:
            text.append(", ")
        style = "dim" if stale else _DEVICE_STYLES.get(dev.state or "", "yellow")
        text.append(f"{dev.name} {dev.state or '?'}", style=style)
    return text


def _outbox_text(status: StatusView | None) -> Text:
    if status is None or status.outbox_depth is None:
        return _txt(None)
    text = Text(str(status.outbox_depth), style="yellow" if status.outbox_depth else "")
    if status.outbox_depth and status.outbox_oldest_age_s is not None:
        text.append(f" ({status.outbox_oldest_age_s:.0f}s)", style="yellow")
    return text


def _header(model: PitModel) -> Text:
    tables = model.tables
    online = sum(1 for t in tables if t.link is Link.ONLINE)
    critical = sum(t.critical_open for t in tables)
    text = Text("Pit", style="bold")
    text.append(f" · site {model.site}" if model.site else " · all sites")
    text.append(f" · {len(tables)} tables, {online} online")
    if critical:
        text.append(f" · {critical} critical alerts open", style="bold red")
    conn = model.connection
    if conn.state is not BrokerLink.IDLE:
        style = "green" if conn.state is BrokerLink.CONNECTED else "bold yellow"
        text.append(f" · broker {conn.broker or ''} ")
        text.append(conn.state.value, style=style)
        if conn.detail and conn.state is not BrokerLink.CONNECTED:
            text.append(f" ({conn.detail})", style="yellow")
    text.append(f" · {model.messages} msgs, {model.duplicates} duplicates dropped")
    bad = model.malformed + model.unexpected + model.internal_errors
    text.append(
        f", {model.malformed} malformed, {model.unexpected} unexpected",
        style="bold yellow" if bad else "",
    )
    if model.internal_errors:
        text.append(f", {model.internal_errors} failed", style="bold red")
    return text


def _overview(tables: list[TableView], site: str | None) -> Table:
    # No vertical rules and wrapping cells: a pit terminal of 80 columns still shows it all.
    grid = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in (
        "table", "link", "devices", "outbox", "phase", "round", "dealer", "alerts", "gaps", "bad"
    ):  # fmt: skip
        grid.add_column(column, overflow="fold")
    for view in tables:
        state = view.state
        phase = _txt(state.phase if state else None)
        if state is not None and state.held:
            phase.append(" ")
            phase.append("HELD", style="bold white on red")
        open_count = len(view.open_alerts)
        alerts = Text(
            str(open_count),
            style="bold red" if view.critical_open else "yellow" if open_count else "dim",
        )
        gaps = view.events.missing
        bad = view.malformed + view.unexpected
        grid.add_row(
            Text(view.key.table if site else str(view.key), style="bold"),
            _link_text(view),
            _devices_text(view),
            _outbox_text(view.status),
            phase,
            _txt(state.round_id if state else None),
            _txt(state.dealer if state else None),
            alerts,
            Text(str(gaps), style="bold yellow" if gaps else "dim"),
            Text(str(bad), style="bold yellow" if bad else "dim"),
        )
    return grid


def _alert_line(alert: AlertView, *, open_: bool) -> Text:
    if alert.critical:
        style = "bold red"
    elif open_:
        style = "bold magenta"  # a severity this pit does not know: shown as needing an answer
    elif alert.severity == "warning":
        style = "yellow"
    else:
        style = "dim"
    text = Text("● " if open_ else "· ", style=style)
    text.append(f"{(alert.severity or '?').upper()} {alert.code or '?'}", style=style)
    where = []
    if alert.round_id is not None:
        where.append(f"round {alert.round_id}")
    if alert.position is not None:
        where.append(f"P{alert.position}")
    if alert.spot is not None:
        where.append(alert.spot)
    if where:
        text.append(" " + " ".join(where))
    if alert.message:
        text.append(f" — {alert.message}", style=style if open_ else "")
    return text


def _position_text(result: PositionResult) -> Text:
    text = Text(f"P{result.position if result.position is not None else '?'} ", style="bold")
    text.append(result.card or "??")
    if result.outcome:
        text.append(f" {result.outcome}", style=_OUTCOME_STYLES.get(result.outcome, ""))
    if result.decision:
        text.append(f"→{result.decision}")
    if result.war_card or result.war_outcome:
        text.append(f" {result.war_card or '??'}")
        if result.war_outcome:
            text.append(f" {result.war_outcome}", style=_OUTCOME_STYLES.get(result.war_outcome, ""))
    if result.net is not None:
        text.append(f" {_money(result.net)}", style=_money_style(result.net))
    return text


def _rounds_table(rounds: tuple[RoundView, ...]) -> Table:
    grid = Table(box=None, pad_edge=False, header_style="dim", show_edge=False)
    grid.add_column("round", no_wrap=True)
    grid.add_column("dealer", no_wrap=True)
    grid.add_column("positions")
    grid.add_column("net", justify="right", no_wrap=True)
    for record in rounds:
        dealer = Text(record.dealer_card or "??")
        if record.dealer_war_card:
            dealer.append(f" / war {record.dealer_war_card}")
        if record.void:
            cells = Text("VOID", style="bold yellow")
            if record.void_reason:
                cells.append(f" ({record.void_reason})", style="yellow")
            if record.positions:
                cells.append("  ")
        else:
            cells = Text()
        cells.append(Text("  ").join(_position_text(p) for p in record.positions))
        grid.add_row(
            _txt(record.round_id),
            dealer,
            cells,
            Text(_money(record.net), style=_money_style(record.net)),
        )
    return grid


_STAT_LABELS = {
    "rounds_per_hour": "rounds/h",
    "alerts_by_code": "alerts",
}
_MONEY_STATS = frozenset({"drop", "win", "drop_cents", "win_cents", "net"})


def _stat_value(name: str, value: _Scalar) -> str:
    if name in _MONEY_STATS and isinstance(value, int) and not isinstance(value, bool):
        return _money(value).lstrip("+")
    if isinstance(value, float):
        return f"{value:.1f}"
    return _DASH if value is None else str(value)


def _stats_text(stats: StatsView) -> Text:
    text = Text("stats ", style="dim")
    parts = [
        f"{_STAT_LABELS.get(name, name)} {_stat_value(name, value)}" for name, value in stats.values
    ]
    for name, items in stats.groups:
        inner = ", ".join(f"{k} {_stat_value(k, v)}" for k, v in items) or "none"
        parts.append(f"{_STAT_LABELS.get(name, name)}: {inner}")
    text.append(" · ".join(parts))
    return text


def _detail(view: TableView) -> Panel:
    lines: list[RenderableType] = []
    for alert in view.open_alerts:
        lines.append(_alert_line(alert, open_=True))
    status = view.status
    if status is not None:
        for dev in status.devices:
            if dev.state != "ok" and dev.detail:
                lines.append(Text(f"{dev.name} {dev.state or '?'}: {dev.detail}", style="yellow"))
    for alert in view.notices:
        lines.append(_alert_line(alert, open_=False))
    if view.rounds:
        lines.append(_rounds_table(view.rounds))
    if view.stats is not None:
        lines.append(_stats_text(view.stats))
    ev = view.events
    if ev.received or ev.missing:
        text = Text("last event ", style="dim")
        text.append(f"#{ev.last_seq} {ev.last_type or '?'}")
        if ev.last_detail:
            text.append(f" {ev.last_detail}")
        if ev.missing:
            text.append(f" · {ev.missing} events missing", style="bold yellow")
        if ev.out_of_order:
            text.append(f" · {ev.out_of_order} out of order", style="yellow")
        lines.append(text)
    state = view.state
    if state is not None and state.shoe_id is not None:
        shoe = Text(f"shoe {state.shoe_id}", style="dim")
        if state.cards_read is not None:
            shoe.append(f" · {state.cards_read} cards read", style="dim")
        if state.cover_seen:
            shoe.append(" · cover seen: reshuffle due", style="yellow")
        lines.append(shoe)
    if status is not None and (status.version or status.rules):
        lines.append(
            Text(
                f"rules {status.rules or '?'} · {status.decks or '?'} decks · "
                f"{status.positions or '?'} positions · version {status.version or '?'}",
                style="dim",
            )
        )
    if not lines:
        lines.append(Text("nothing yet", style="dim"))
    title = Text(str(view.key), style="bold")
    title.append(" ")
    title.append_text(_link_text(view))
    if view.critical_open:
        border = "red"
    elif view.link is not Link.ONLINE:
        border = "yellow"
    else:
        border = "blue"
    return Panel(Group(*lines), title=title, title_align="left", border_style=border)


MAX_DETAIL_PANELS = 12
"""With more tables than this, only the tables that need a supervisor's eye (open
critical alerts, offline, any open alert, in that order) get a panel; every table
keeps its overview line. A full redraw of 200 panels takes seconds, and the view
must keep up with the feed."""


def _attention(view: TableView) -> tuple[int, int, int]:
    return (-view.critical_open, 0 if view.link is Link.OFFLINE else 1, -len(view.open_alerts))


def render(model: PitModel, *, max_details: int = MAX_DETAIL_PANELS) -> RenderableType:
    """The whole pit view of a model: a header, one line per table, and a panel per
    table (per table that needs attention, beyond ``max_details`` tables)."""
    tables = model.tables
    parts: list[RenderableType] = [_header(model)]
    if not tables:
        parts.append(Text(f"no table seen yet on {model.subscription}", style="dim"))
        return Group(*parts)
    parts.append(_overview(tables, model.site))
    detailed = tables
    if len(tables) > max_details:
        chosen = {id(v) for v in sorted(tables, key=_attention)[:max_details]}
        detailed = [v for v in tables if id(v) in chosen]
        parts.append(
            Text(
                f"{len(tables) - len(detailed)} of {len(tables)} tables shown by their overview "
                "line only: panels go to the tables with open alerts or offline first "
                "(--site narrows the view)",
                style="dim",
            )
        )
    parts.extend(_detail(view) for view in detailed)
    return Group(*parts)


# --------------------------------------------------------------------------- network


class Protocol(StrEnum):
    """MQTT version. 5 by default (MQTT.md); 3.1.1 for a broker that cannot speak 5,
    such as the demo's embedded amqtt. The pit never publishes, so what MQTT.md holds
    against 3.1.1 (a denied publish acknowledged as if it succeeded) does not touch it."""

    V5 = "5"
    V311 = "3.1.1"


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    url: str
    host: str
    port: int
    tls: ssl.SSLContext | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    protocol: Protocol = Protocol.V5


def read_password_file(path: str | Path) -> str:
    """The password in ``path``; a secret that others may read is refused."""
    try:
        return read_password(Path(path), key="--password-file")
    except PublisherConfigError as exc:
        raise PitConfigError(str(exc)) from exc


def broker_settings(
    url: str,
    *,
    username: str | None = None,
    password_file: str | Path | None = None,
    ca_file: str | Path | None = None,
    protocol: str = Protocol.V5,
) -> BrokerSettings:
    """Connection settings from the pit's options; PitConfigError names the bad one."""
    try:
        version = Protocol(protocol)
    except ValueError:
        raise PitConfigError(f"--protocol {protocol!r}: 5 or 3.1.1") from None
    try:
        address = parse_broker_url(url, key="--broker")
    except PublisherConfigError as exc:
        raise PitConfigError(str(exc)) from exc
    tls: ssl.SSLContext | None = None
    if address.tls:
        try:
            # Verifies the broker's certificate and its host name (DEVICES.md: ca_file).
            tls = tls_context(Path(ca_file) if ca_file else None, key="--ca-file")
        except PublisherConfigError as exc:
            raise PitConfigError(str(exc)) from exc
    elif ca_file is not None:
        raise PitConfigError("--ca-file needs an mqtts:// broker URL")
    password = None
    if password_file is not None:
        if username is None:
            raise PitConfigError("--password-file needs --username")
        password = read_password_file(password_file)
    return BrokerSettings(
        url=url,
        host=address.host,
        port=address.port,
        tls=tls,
        username=username,
        password=password,
        protocol=version,
    )


def _client(settings: BrokerSettings) -> aiomqtt.Client:
    return aiomqtt.Client(
        settings.host,
        settings.port,
        username=settings.username,
        password=settings.password,
        identifier=f"pit-{secrets.token_hex(6)}",
        protocol=(
            aiomqtt.ProtocolVersion.V5
            if settings.protocol is Protocol.V5
            else aiomqtt.ProtocolVersion.V311
        ),
        keepalive=KEEPALIVE_S,
        tls_context=settings.tls,
        max_queued_incoming_messages=MAX_QUEUED_MESSAGES,
    )


class SubscriptionRefused(PitConnectError):
    """The broker refused the pit's subscription (its access rules): ask for read access."""


def subscription_refusal(granted: Iterable[ReasonCode | int]) -> str | None:
    """What a SUBACK refused, or None: a code of 0x80 or above is a refusal (MQTT 5
    reason codes; 0x80 is 3.1.1's only failure code)."""
    for code in granted:
        if isinstance(code, ReasonCode):
            if code.value >= 0x80:
                return f"{code.getName()} (0x{code.value:02X})"
        elif code >= 0x80:
            return f"0x{code:02X}"
    return None


async def _subscribe(client: aiomqtt.Client, model: PitModel) -> None:
    refused = subscription_refusal(await client.subscribe(model.subscription, qos=1))
    if refused is not None:
        raise SubscriptionRefused(f"subscription to {model.subscription} refused: {refused}")


def _payload_bytes(payload: object) -> bytes:
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    if payload is None:
        return b""
    return str(payload).encode("utf-8")


async def _receive(
    client: aiomqtt.Client,
    model: PitModel,
    on_update: Callable[[PitModel], None] | None,
    dirty: asyncio.Event | None,
) -> None:
    async for message in client.messages:
        try:
            model.feed(message.topic.value, _payload_bytes(message.payload))
        except Exception:
            # The model counts every bad message itself; this is a defect, and a pit
            # display must outlive it (one traceback, then a count on screen).
            if not model.internal_errors:
                log.exception("pit: a message on %s could not be shown", message.topic.value)
            model.note_internal_error()
        _changed(model, on_update, dirty)


def _changed(
    model: PitModel,
    on_update: Callable[[PitModel], None] | None,
    dirty: asyncio.Event | None,
) -> None:
    if dirty is not None:
        dirty.set()
    if on_update is not None:
        on_update(model)


async def _follow(
    settings: BrokerSettings,
    model: PitModel,
    on_update: Callable[[PitModel], None] | None,
    dirty: asyncio.Event,
) -> None:
    """Stay subscribed for ever: reconnect with capped, jittered backoff."""
    rng = random.Random()
    failures = 0
    was_lost = False
    while True:
        model.set_connection(
            BrokerLink.CONNECTING if not failures else BrokerLink.RETRYING, settings.url, None
        )
        _changed(model, on_update, dirty)
        try:
            async with _client(settings) as client:
                await _subscribe(client, model)
                if was_lost:
                    log.info("pit: broker %s is back", settings.url)
                was_lost = False
                failures = 0
                model.set_connection(BrokerLink.CONNECTED, settings.url, None)
                _changed(model, on_update, dirty)
                await _receive(client, model, on_update, dirty)
        except (aiomqtt.MqttError, SubscriptionRefused) as exc:
            # A refused subscription may be an access rule being fixed: retry it too.
            if not was_lost:
                log.warning("pit: broker %s lost: %s", settings.url, exc)
                was_lost = True
            delay = min(RECONNECT_MAX_S, RECONNECT_MIN_S * 2 ** min(failures, 16))
            delay *= rng.uniform(0.5, 1.0)
            failures += 1
            model.set_connection(BrokerLink.RETRYING, settings.url, f"{exc}; retry in {delay:.1f}s")
            _changed(model, on_update, dirty)
            await asyncio.sleep(delay)


async def _redraw(live: Live, model: PitModel, dirty: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await dirty.wait()
        dirty.clear()
        began = loop.time()
        live.update(render(model), refresh=True)
        drawing_s = loop.time() - began
        # Many messages at once (the retained ones on subscribing) make one redraw,
        # and drawing never takes more than a fifth of the loop from reading the feed.
        await asyncio.sleep(max(REFRESH_INTERVAL_S, 4 * drawing_s))


async def _cancel(tasks: Iterable[asyncio.Task[Any]]) -> None:
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _snapshot(
    settings: BrokerSettings,
    model: PitModel,
    stop: asyncio.Event,
    on_update: Callable[[PitModel], None] | None,
) -> None:
    model.set_connection(BrokerLink.CONNECTING, settings.url, None)
    try:
        async with _client(settings) as client:
            await _subscribe(client, model)
            model.set_connection(BrokerLink.CONNECTED, settings.url, None)
            receiver = asyncio.create_task(
                _receive(client, model, on_update, None), name="pit-once-receive"
            )
            stopper = asyncio.create_task(stop.wait(), name="pit-once-stop")
            try:
                done, _ = await asyncio.wait(
                    {receiver, stopper},
                    timeout=ONCE_SETTLE_S,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                await _cancel((receiver, stopper))
            if receiver in done:
                receiver.result()  # the connection was lost: its MqttError, raised here
    except aiomqtt.MqttError as exc:
        model.set_connection(BrokerLink.RETRYING, settings.url, str(exc))
        raise PitConnectError(f"broker {settings.url}: {exc}") from exc


async def watch(
    broker_url: str,
    site: str | None,
    *,
    console: Console | None = None,
    stop: asyncio.Event | None = None,
    prefix: str = DEFAULT_PREFIX,
    username: str | None = None,
    password_file: str | Path | None = None,
    ca_file: str | Path | None = None,
    protocol: str = Protocol.V5,
    once: bool = False,
    model: PitModel | None = None,
    on_update: Callable[[PitModel], None] | None = None,
) -> None:
    """Show every table of ``site`` (every site when None) until ``stop`` is set.

    MQTT 5 unless ``protocol="3.1.1"`` (the demo's amqtt broker speaks only that).
    Reconnects for ever with capped, jittered backoff, showing the broker's state
    on screen. With ``once``, prints one snapshot after the retained messages
    (about a second) and returns; a broker that cannot be reached is then a
    :class:`PitConnectError`. ``model`` (its own prefix and site are used) lets a
    caller read what was shown; ``on_update`` is called after every message and
    connection change. Bad options raise :class:`PitConfigError`.
    """
    settings = broker_settings(
        broker_url,
        username=username,
        password_file=password_file,
        ca_file=ca_file,
        protocol=protocol,
    )
    if model is None:
        model = PitModel(prefix, site)
    console = console if console is not None else Console()
    stop = stop if stop is not None else asyncio.Event()
    if once:
        await _snapshot(settings, model, stop, on_update)
        console.print(render(model))
        return
    dirty = asyncio.Event()
    with Live(render(model), console=console, auto_refresh=False) as live:
        try:
            async with asyncio.TaskGroup() as group:
                tasks = (
                    group.create_task(
                        _follow(settings, model, on_update, dirty), name="pit-follow"
                    ),
                    group.create_task(_redraw(live, model, dirty), name="pit-redraw"),
                )
                await stop.wait()
                for task in tasks:
                    task.cancel()
        finally:
            model.set_connection(BrokerLink.IDLE, settings.url, None)
            live.update(render(model), refresh=True)
    if not console.is_terminal:
        console.line()  # a file or pipe gets the final view once, at the end; end its line


# --------------------------------------------------------------------------- CLI


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--broker", required=True, metavar="URL", help="mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"
    )
    parser.add_argument("--site", help="show only this site's tables (default: every site)")
    parser.add_argument(
        "--prefix",
        default=DEFAULT_PREFIX,
        metavar="PATTERN",
        help="topic prefix of a table, with {site} and {table} (default: %(default)s)",
    )
    parser.add_argument("--username", help="MQTT user name of this pit display")
    parser.add_argument("--password-file", type=Path, metavar="FILE", help="MQTT password file")
    parser.add_argument("--ca-file", type=Path, metavar="FILE", help="CA certificate (mqtts://)")
    parser.add_argument(
        "--protocol",
        choices=[p.value for p in Protocol],
        default=Protocol.V5.value,
        help="MQTT version (default: %(default)s; 3.1.1 for a broker without MQTT 5)",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help=f"print one snapshot after the retained messages (~{ONCE_SETTLE_S:.0f} s), then exit",
    )


def _console_for(once: bool) -> Console:
    console = Console()
    if once and not console.is_terminal and "COLUMNS" not in os.environ:
        # A snapshot piped to a file or a script is read whole: do not squeeze it to 80.
        return Console(width=160)
    return console


async def _main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        await watch(
            args.broker,
            args.site,
            console=_console_for(args.once),
            stop=stop,
            prefix=args.prefix,
            username=args.username,
            password_file=args.password_file,
            ca_file=args.ca_file,
            protocol=args.protocol,
            once=args.once,
        )
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


def run(args: argparse.Namespace) -> int:
    try:
        asyncio.run(_main(args))
    except PitConfigError as exc:
        print(f"table-controller pit: {exc}", file=sys.stderr)
        return 2
    except PitConnectError as exc:
        print(f"table-controller pit: {exc}", file=sys.stderr)
        return 1
    return 0
