"""Every MQTT payload of the feed, as strict pydantic models (docs/feed.md): the catalogue.

The models are the interface: a producer that drifts from them fails validation
(``extra="forbid"``, no silent coercion of numbers or booleans), and
``table-controller schema`` generates the shipped JSON Schemas and AsyncAPI
document from them. They live by topic in ``status`` (status and state),
``events``, ``records``, ``alerts`` (alerts and stats) and ``delivery`` (what
recorders send the table); this module gathers them and parses any of them.

Every payload carries the envelope ``schema`` (``name/version``), ``id``,
``table``, ``site`` and ``ts`` (RFC 3339, UTC, milliseconds, ``Z``). docs/feed.md
asks for ``id`` on events, alerts and round records; the table gives every
payload one (status, state and stats too), because the outbox identifies each
message by it and a subscriber drops a resend by it.

Shapes that docs/feed.md leaves open are fixed here:

* ``table-state/1``: ``positions`` lists the positions with chips or cards on
  the layout, each ``{position, wagers, cards}`` where ``wagers`` maps a spot
  (``initial``, ``tie``, ``war``, ``war_tie``) to its amount in cents (null on
  a presence-only board) and ``cards`` lists the position's cards in deal
  order; the dealer's cards are ``dealer_cards``; burn cards are only counted
  (``burn_cards``), never shown (§(h)(1)).
* ``table-event/1``: the fields each ``type`` adds are the ``*Event`` models
  (a ``card`` event as in the round record, with ``card: null`` for ``burn``
  and ``war_burn``, §(h)(1)).
* ``table-stats/1``: ``alerts_by_code`` maps an alert code to its count; the
  house's ``drop`` and ``win`` are cents, null when amounts are unknown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from table_controller.feed.alerts import TableAlert, TableStats
from table_controller.feed.common import (
    BURN_ROLES,
    RFC3339_PATTERN,
    AlertCode,
    CardRole,
    CardSource,
    Decision,
    DeviceCondition,
    Outcome,
    Payload,
    Phase,
    ResolvedBy,
    RulesName,
    Severity,
    Spot,
    WagerResult,
    new_id,
    rfc3339,
)
from table_controller.feed.delivery import MAX_REPLAY, TableAck, TableReplay
from table_controller.feed.errors import PayloadError
from table_controller.feed.events import (
    TABLE_EVENT,
    AlertEvent,
    BetsClosedEvent,
    CardEvent,
    DealerChangedEvent,
    DecisionEvent,
    ReshuffleDueEvent,
    RoundSettledEvent,
    RoundVoidedEvent,
    SettingsChangedEvent,
    ShoeStartedEvent,
    TableEvent,
)
from table_controller.feed.records import CardRecord, PositionRecord, WagerRecord, WarRound
from table_controller.feed.status import (
    Devices,
    DeviceStatus,
    FeedPosition,
    JournalCondition,
    OutboxFigures,
    PositionView,
    ShoeView,
    TableState,
    TableStatus,
)
from table_controller.feed.topics import CONTENT_TYPE, TOPIC_RULES, Topic, TopicRule

__all__ = [
    "BURN_ROLES",
    "CONTENT_TYPE",
    "MAX_REPLAY",
    "PAYLOAD_MODELS",
    "RFC3339_PATTERN",
    "SCHEMA_NAMES",
    "TABLE_EVENT",
    "TOPIC_RULES",
    "AlertCode",
    "AlertEvent",
    "BetsClosedEvent",
    "CardEvent",
    "CardRecord",
    "CardRole",
    "CardSource",
    "DealerChangedEvent",
    "Decision",
    "DecisionEvent",
    "DeviceCondition",
    "DeviceStatus",
    "Devices",
    "FeedPosition",
    "JournalCondition",
    "OutboxFigures",
    "Outcome",
    "Payload",
    "Phase",
    "PositionRecord",
    "PositionView",
    "ReshuffleDueEvent",
    "ResolvedBy",
    "RoundSettledEvent",
    "RoundVoidedEvent",
    "RulesName",
    "SettingsChangedEvent",
    "Severity",
    "ShoeStartedEvent",
    "ShoeView",
    "Spot",
    "TableAck",
    "TableAlert",
    "TableEvent",
    "TableReplay",
    "TableState",
    "TableStats",
    "TableStatus",
    "Topic",
    "TopicRule",
    "WagerRecord",
    "WagerResult",
    "WarRound",
    "new_id",
    "parse_payload",
    "rfc3339",
]

PAYLOAD_MODELS: Final[tuple[type[Payload], ...]] = (
    TableStatus,
    TableState,
    WarRound,
    TableAlert,
    TableStats,
    TableAck,
    TableReplay,
)
"""Every payload model but the events, which are one model per ``type`` (TABLE_EVENT)."""

SCHEMA_NAMES: Final[tuple[str, ...]] = tuple(rule.schema for rule in TOPIC_RULES.values())
"""Every payload name, in topic order."""

TABLE_EVENT_SCHEMA: Final = TOPIC_RULES[Topic.EVENTS].schema
_BY_SCHEMA: Final[dict[str, type[Payload]]] = {m.SCHEMA: m for m in PAYLOAD_MODELS}


def parse_payload(data: bytes | str | Mapping[str, Any]) -> Payload:
    """Validate a payload of any kind, chosen by its ``schema``.

    Raises :class:`PayloadError` for what is no payload of the feed, and pydantic's
    ``ValidationError`` (a ``ValueError`` too) when it does not match its schema.
    """
    try:
        obj = json.loads(data) if isinstance(data, bytes | str) else dict(data)
    except ValueError as exc:
        raise PayloadError(f"a payload is JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise PayloadError("a payload is a JSON object")
    name = obj.get("schema")
    if name == TABLE_EVENT_SCHEMA:
        return TABLE_EVENT.validate_python(obj)
    model = _BY_SCHEMA.get(name) if isinstance(name, str) else None
    if model is None:
        raise PayloadError(f"unknown payload schema {name!r}")
    return model.model_validate(obj)
