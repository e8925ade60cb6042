"""Every MQTT payload the table publishes, as strict pydantic models (``MQTT.md``).

The models are the interface: a producer that drifts from them fails
validation (``extra="forbid"``, no silent coercion of numbers or booleans),
and ``table-controller schema`` generates the shipped JSON Schemas and
AsyncAPI document from them.

Every payload carries the envelope ``schema`` (``name/version``), ``id``,
``table``, ``site`` and ``ts`` (RFC 3339, UTC, milliseconds, ``Z``). MQTT.md
asks for ``id`` on events, alerts and round records; the table gives every
payload one (status, state and stats too), because the outbox identifies
each message by it and a subscriber drops a resend by it.

Shapes that MQTT.md leaves open are fixed here:

* ``table-state/1``: ``positions`` lists the positions with chips or cards on
  the layout, each ``{position, wagers, cards}`` where ``wagers`` maps a spot
  (``initial``, ``tie``, ``war``, ``war_tie``) to its amount in cents (null on
  a presence-only board) and ``cards`` lists the position's cards in deal
  order; the dealer's cards are ``dealer_cards``; burn cards are only counted
  (``burn_cards``), never shown (§(h)(1)).
* ``table-event/1``: the fields each ``type`` adds are the ``*Event`` models
  below (a ``card`` event as in the round record, with ``card: null`` for
  ``burn`` and ``war_burn``, §(h)(1)).
* ``table-stats/1``: ``alerts_by_code`` maps an alert code to its count; the
  house's ``drop`` and ``win`` are cents, null when amounts are unknown.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictInt,
    TypeAdapter,
    WithJsonSchema,
    model_validator,
)

from table_controller.engine.rules import RulesName as RulesName

# The domain's enums, re-exported: the payloads speak the engine's words.
from table_controller.engine.state import AlertCode as AlertCode
from table_controller.engine.state import Decision as Decision
from table_controller.engine.state import Outcome as Outcome
from table_controller.engine.state import Phase as Phase
from table_controller.engine.state import ResolvedBy as ResolvedBy
from table_controller.engine.state import Role, Source, SpotKind
from table_controller.engine.state import Severity as Severity
from table_controller.service.outbox import OutboxMessage

if TYPE_CHECKING:
    from table_controller.service.config import TableConfig

CONTENT_TYPE: Final = "application/json"

CardRole = Role
CardSource = Source
Spot = SpotKind


# -- topics -------------------------------------------------------------------


class Topic(StrEnum):
    """The last topic level under the table's prefix (MQTT.md)."""

    STATUS = "status"
    STATE = "state"
    EVENTS = "events"
    ROUNDS = "rounds"
    ALERTS = "alerts"
    STATS = "stats"


@dataclass(frozen=True, slots=True)
class TopicRule:
    retained: bool
    qos: int


# MQTT.md, the topic table: retained and QoS per topic.
TOPIC_RULES: Final[Mapping[Topic, TopicRule]] = {
    Topic.STATUS: TopicRule(retained=True, qos=1),
    Topic.STATE: TopicRule(retained=True, qos=1),
    Topic.EVENTS: TopicRule(retained=False, qos=1),
    Topic.ROUNDS: TopicRule(retained=False, qos=1),
    Topic.ALERTS: TopicRule(retained=False, qos=1),
    Topic.STATS: TopicRule(retained=True, qos=1),
}


# -- value types -------------------------------------------------------------------


def _timestamp_in(value: object) -> object:
    # Only RFC 3339 text or an aware datetime: a bare number is not a timestamp here.
    if isinstance(value, str | datetime):
        return value
    raise ValueError("a timestamp is RFC 3339 text or a datetime")


def _utc_ms(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("a timestamp must carry its UTC offset")
    value = value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def rfc3339(value: datetime) -> str:
    """``value`` as MQTT.md writes times: RFC 3339, UTC, milliseconds, ``Z``."""
    return _utc_ms(value).isoformat(timespec="milliseconds").replace("+00:00", "Z")


RFC3339_PATTERN: Final = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$"

Timestamp: TypeAlias = Annotated[
    datetime,
    BeforeValidator(_timestamp_in),
    AfterValidator(_utc_ms),
    PlainSerializer(rfc3339, return_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "pattern": RFC3339_PATTERN,
            "description": "RFC 3339, UTC",
        }
    ),
]


def _net_per_unit(value: object) -> int | float:
    # MQTT.md: a number, an int when whole (10), else a float (-0.5 for a surrender).
    if isinstance(value, bool):
        raise ValueError("net_per_unit is a number, not a boolean")
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("net_per_unit must be finite")
        return int(value) if value.is_integer() else value
    raise ValueError("net_per_unit is a number")


NetPerUnit: TypeAlias = Annotated[
    int | float,
    BeforeValidator(_net_per_unit),
    WithJsonSchema({"type": "number"}),
]

Card: TypeAlias = Annotated[
    str,
    Field(
        pattern=r"^[2-9TJQKA][CDHS]$",
        description="rank then suit: 2-9, T, J, Q, K, A; C, D, H, S (DEVICES.md)",
    ),
]
Position: TypeAlias = Annotated[StrictInt, Field(ge=1, le=10)]
Count: TypeAlias = Annotated[StrictInt, Field(ge=0)]
Cents: TypeAlias = Annotated[StrictInt, Field(ge=0, description="cents")]
NetCents: TypeAlias = Annotated[StrictInt, Field(description="the players' net, cents")]
Odds: TypeAlias = Annotated[str, Field(pattern=r"^\d+:\d+$")]
Text: TypeAlias = Annotated[str, Field(min_length=1, max_length=1000)]
Ident: TypeAlias = Annotated[str, Field(min_length=1, max_length=128)]
RoundId: TypeAlias = Annotated[StrictInt, Field(ge=1)]
FeedSeq: TypeAlias = Annotated[
    StrictInt, Field(ge=1, description="per table and epoch across events, rounds, alerts")
]


def _absent(value: object) -> bool:
    return value is None


# A field the table adds (MQTT.md): left out of the JSON when not set, so a payload
# without it reads back as it was written.
NOT_SET: Final[Any] = Field(default=None, exclude_if=_absent)


BURN_ROLES: Final = frozenset({CardRole.BURN, CardRole.WAR_BURN})


class WagerResult(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"
    SURRENDER = "surrender"
    VOID = "void"


class DeviceCondition(StrEnum):
    OK = "ok"
    OFFLINE = "offline"
    FAULT = "fault"


# -- models ---------------------------------------------------------------------


class _Part(BaseModel):
    """A strict piece of a payload: unknown keys fail, nothing is coerced silently."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        json_schema_serialization_defaults_required=True,
    )


class Payload(_Part):
    """The envelope every payload carries (MQTT.md)."""

    SCHEMA: ClassVar[str]
    TOPIC: ClassVar[Topic]

    schema_: str = Field(alias="schema", description="payload name/version")
    id: Ident = Field(description="unique per message; kept when the message is sent again")
    table: Ident
    site: Ident
    ts: Timestamp

    def to_json(self) -> bytes:
        """The payload as published: compact JSON, UTF-8."""
        return self.model_dump_json().encode("utf-8")


# table-status/1 ----------------------------------------------------------------


class DeviceStatus(_Part):
    state: DeviceCondition
    detail: str | None


class Devices(_Part):
    shoe: DeviceStatus
    sensors: DeviceStatus
    console: DeviceStatus


class OutboxFigures(_Part):
    depth: Count
    oldest_age_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None


class FeedFigures(_Part):
    epoch: Ident
    last_feed_seq: Count


class TableStatus(Payload):
    """`status` (retained): the table and its devices; `online: false` is the last will."""

    SCHEMA: ClassVar[str] = "table-status/1"
    TOPIC: ClassVar[Topic] = Topic.STATUS

    schema_: Literal["table-status/1"] = Field(default="table-status/1", alias="schema")
    online: StrictBool
    version: Text
    rules: RulesName
    decks: Annotated[StrictInt, Field(ge=1, le=8)]
    positions: Position
    devices: Devices
    outbox: OutboxFigures
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] | None = NOT_SET
    instance: Ident | None = NOT_SET
    started: Timestamp | None = NOT_SET
    journal: DeviceStatus | None = NOT_SET
    feed: FeedFigures | None = NOT_SET


# table-state/1 -----------------------------------------------------------------


class ShoeView(_Part):
    id: Ident | None
    cards_read: Count
    cover_seen: StrictBool


class PositionView(_Part):
    position: Position
    wagers: dict[Spot, Cents | None] = Field(
        description="chips on each spot: cents, null on a presence-only board"
    )
    cards: list[Card | None] = Field(
        description="the position's cards in deal order; null while a misread waits"
    )


class TableState(Payload):
    """`state` (retained): the layout now. Burn cards as a count, never a rank (§(h)(1))."""

    SCHEMA: ClassVar[str] = "table-state/1"
    TOPIC: ClassVar[Topic] = Topic.STATE

    schema_: Literal["table-state/1"] = Field(default="table-state/1", alias="schema")
    phase: Phase
    round_id: RoundId
    held: StrictBool
    dealer: Ident | None
    shoe: ShoeView
    positions: list[PositionView]
    dealer_cards: list[Card | None]
    burn_cards: Count


# table-event/1 -----------------------------------------------------------------


class _EventBase(Payload):
    SCHEMA: ClassVar[str] = "table-event/1"
    TOPIC: ClassVar[Topic] = Topic.EVENTS

    schema_: Literal["table-event/1"] = Field(default="table-event/1", alias="schema")
    seq: Annotated[StrictInt, Field(ge=1, description="per table, +1 each event")]
    epoch: Ident = Field(description="the journal's identity: a new journal, a new epoch")
    round_id: RoundId | None
    feed_seq: FeedSeq | None = NOT_SET


class ShoeStartedEvent(_EventBase):
    type: Literal["shoe_started"]
    shoe_id: Ident


class DealerChangedEvent(_EventBase):
    type: Literal["dealer_changed"]
    dealer: Ident


class BetsClosedEvent(_EventBase):
    type: Literal["bets_closed"]
    by: Literal["no_more_bets", "first_card"] = Field(
        description="the dealer's NO_MORE_BETS (§(h)(2)) or the first card of the deal"
    )
    positions: list[Position] = Field(description="the playing positions")


class CardEvent(_EventBase):
    """A card taken, as in the round record; a burn card's rank is never shown (§(h)(1))."""

    type: Literal["card"]
    n: Annotated[StrictInt, Field(ge=1)]
    card: Card | None
    role: CardRole
    position: Position | None
    source: CardSource

    @model_validator(mode="after")
    def _burns_hidden(self) -> CardEvent:
        if self.role in BURN_ROLES and self.card is not None:
            raise ValueError("a burn card is published without its rank (§(h)(1)): card null")
        return self


class DecisionEvent(_EventBase):
    type: Literal["decision"]
    position: Position
    decision: Decision


class RoundSettledEvent(_EventBase):
    type: Literal["round_settled"]
    net: NetCents | None


class RoundVoidedEvent(_EventBase):
    type: Literal["round_voided"]
    reason: Text | None


class ReshuffleDueEvent(_EventBase):
    """The cover card came out (§(h)(4)): the round completes, then the shoe is reshuffled."""

    type: Literal["reshuffle_due"]


class AlertEvent(_EventBase):
    """An alert raised or resolved, in the event stream (its full message goes to `alerts`)."""

    type: Literal["alert"]
    alert: Ident
    code: AlertCode
    severity: Severity
    resolved_by: ResolvedBy | None


class SettingsChangedEvent(_EventBase):
    """The table's rules, decks, positions or limits changed, between shoes."""

    type: Literal["settings_changed"]
    changed: list[Ident] = Field(description="the config keys that changed")
    settings: dict[str, Any] = Field(description="the settings now in force")


EVENT_MODELS: Final = (
    ShoeStartedEvent,
    DealerChangedEvent,
    BetsClosedEvent,
    CardEvent,
    DecisionEvent,
    RoundSettledEvent,
    RoundVoidedEvent,
    ReshuffleDueEvent,
    AlertEvent,
    SettingsChangedEvent,
)

TableEvent: TypeAlias = Annotated[
    ShoeStartedEvent
    | DealerChangedEvent
    | BetsClosedEvent
    | CardEvent
    | DecisionEvent
    | RoundSettledEvent
    | RoundVoidedEvent
    | ReshuffleDueEvent
    | AlertEvent
    | SettingsChangedEvent,
    Field(discriminator="type"),
]
TABLE_EVENT: Final[TypeAdapter[TableEvent]] = TypeAdapter(TableEvent)


# war-round/1 -----------------------------------------------------------------------


class CardRecord(_Part):
    n: Annotated[StrictInt, Field(ge=1)]
    card: Card | None = Field(description="null only for a card never identified")
    role: CardRole
    position: Position | None
    source: CardSource


class WagerRecord(_Part):
    spot: Spot
    amount: Cents | None
    odds: Odds
    result: WagerResult
    net_per_unit: NetPerUnit
    net: NetCents | None


class PositionRecord(_Part):
    position: Position
    card: Card | None
    outcome: Outcome | None
    decision: Decision | None
    war_card: Card | None
    war_outcome: Outcome | None
    wagers: list[WagerRecord]
    net: NetCents | None


class WarRound(Payload):
    """`rounds`: the full record of one round, enough to rebuild every hand (§(i)(4))."""

    SCHEMA: ClassVar[str] = "war-round/1"
    TOPIC: ClassVar[Topic] = Topic.ROUNDS

    schema_: Literal["war-round/1"] = Field(default="war-round/1", alias="schema")
    round_id: RoundId
    shoe_id: Ident | None
    dealer: Ident | None
    rules: RulesName
    started: Timestamp
    ended: Timestamp
    void: StrictBool
    void_reason: Text | None
    cards: list[CardRecord]
    dealer_card: Card | None
    dealer_war_card: Card | None
    positions: list[PositionRecord]
    net: NetCents | None
    alerts: list[Ident] = Field(description="the alert ids raised during the round")
    feed_seq: FeedSeq | None = NOT_SET


# table-alert/1 -----------------------------------------------------------------------


class TableAlert(Payload):
    """`alerts`: one message when an alert is raised, one more when it is resolved."""

    SCHEMA: ClassVar[str] = "table-alert/1"
    TOPIC: ClassVar[Topic] = Topic.ALERTS

    schema_: Literal["table-alert/1"] = Field(default="table-alert/1", alias="schema")
    alert: Ident = Field(description="the alert's own id (the same in both messages)")
    code: AlertCode
    severity: Severity
    message: Text
    round_id: RoundId | None
    position: Position | None
    spot: Spot | None
    resolved_by: ResolvedBy | None
    feed_seq: FeedSeq | None = NOT_SET


# table-stats/1 --------------------------------------------------------------------


class TableStats(Payload):
    """`stats` (retained): counts since the journal began."""

    SCHEMA: ClassVar[str] = "table-stats/1"
    TOPIC: ClassVar[Topic] = Topic.STATS

    schema_: Literal["table-stats/1"] = Field(default="table-stats/1", alias="schema")
    rounds: Count
    rounds_per_hour: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None
    ties: Count
    wars: Count
    surrenders: Count
    voids: Count
    alerts_by_code: dict[AlertCode, Count]
    drop: Cents | None = Field(description="cents wagered; null when amounts are unknown")
    win: NetCents | None = Field(description="the house's win in cents; null when unknown")


# table-ack/1, table-replay/1 (recorders -> table) -------------------------------------


class _FromRecorder(_Part):
    table: Ident
    site: Ident
    ts: Timestamp
    recorder: Ident
    epoch: Ident


class TableAck(_FromRecorder):
    """`ack` (retained): every message of ``epoch`` up to ``feed_seq`` is committed."""

    schema_: Literal["table-ack/1"] = Field(default="table-ack/1", alias="schema")
    id: Ident | None = None
    feed_seq: FeedSeq


class TableReplay(_FromRecorder):
    """`replay`: publish ``from_feed_seq``..``to_feed_seq`` again (at most 10,000)."""

    schema_: Literal["table-replay/1"] = Field(default="table-replay/1", alias="schema")
    id: Ident | None = None
    from_feed_seq: FeedSeq
    to_feed_seq: FeedSeq

    @model_validator(mode="after")
    def _range(self) -> TableReplay:
        if not 0 <= self.to_feed_seq - self.from_feed_seq < 10_000:
            raise ValueError("replay: from_feed_seq..to_feed_seq must be 1 to 10,000 messages")
        return self


# -- catalogue and parsing ------------------------------------------------------------

PAYLOAD_MODELS: Final[tuple[type[Payload], ...]] = (
    TableStatus,
    TableState,
    WarRound,
    TableAlert,
    TableStats,
)
SCHEMA_NAMES: Final[tuple[str, ...]] = (
    "table-status/1",
    "table-state/1",
    "table-event/1",
    "war-round/1",
    "table-alert/1",
    "table-stats/1",
)
_BY_SCHEMA: Final[dict[str, type[Payload]]] = {m.SCHEMA: m for m in PAYLOAD_MODELS}


def parse_payload(data: bytes | str | Mapping[str, Any]) -> Payload:
    """Validate a published payload of any kind, chosen by its ``schema``.

    Raises ``ValueError`` (pydantic's ``ValidationError`` is one) when it does
    not match its schema.
    """
    obj = json.loads(data) if isinstance(data, bytes | str) else dict(data)
    if not isinstance(obj, dict):
        raise ValueError("a payload is a JSON object")
    name = obj.get("schema")
    if name == "table-event/1":
        return TABLE_EVENT.validate_python(obj)
    model = _BY_SCHEMA.get(name) if isinstance(name, str) else None
    if model is None:
        raise ValueError(f"unknown payload schema {name!r}")
    return model.model_validate(obj)


# -- building messages ----------------------------------------------------------------


def new_id() -> str:
    """A fresh message id."""
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class Envelope:
    """Who publishes: the table, its site and its topic prefix; builds outbox messages.

    Each builder takes the payload's own fields (as the engine returns them),
    adds the envelope, validates the whole against its model and returns the
    :class:`OutboxMessage` with the topic's QoS and retain flag (MQTT.md).
    """

    table: str
    site: str
    prefix: str

    @classmethod
    def from_config(cls, cfg: TableConfig) -> Envelope:
        return cls(table=cfg.table.id, site=cfg.table.site, prefix=cfg.topic_prefix)

    def topic(self, topic: Topic) -> str:
        return f"{self.prefix}/{topic.value}"

    def fields(self, *, ts: datetime, id: str | None = None) -> dict[str, Any]:
        """The envelope keys except ``schema``: ``id``, ``table``, ``site``, ``ts``."""
        return {"id": id or new_id(), "table": self.table, "site": self.site, "ts": ts}

    def message(self, payload: Payload) -> OutboxMessage:
        """A validated payload as an outbox message on its topic."""
        if payload.table != self.table or payload.site != self.site:
            raise ValueError(
                f"payload of table {payload.table!r} at {payload.site!r} published as "
                f"{self.table!r} at {self.site!r}"
            )
        rule = TOPIC_RULES[payload.TOPIC]
        return OutboxMessage(
            id=payload.id,
            topic=self.topic(payload.TOPIC),
            payload=payload.to_json(),
            qos=rule.qos,
            retain=rule.retained,
        )

    def _build(
        self, model: type[Payload], body: Mapping[str, Any], ts: datetime, id: str | None
    ) -> OutboxMessage:
        return self.message(model.model_validate({**body, **self.fields(ts=ts, id=id)}))

    def status(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableStatus, body, ts, id)

    def state(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableState, body, ts, id)

    def round_record(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(WarRound, body, ts, id)

    def alert(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableAlert, body, ts, id)

    def stats(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableStats, body, ts, id)

    def event(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        """``body`` holds ``seq``, ``epoch``, ``round_id``, ``type`` and the type's fields."""
        event = TABLE_EVENT.validate_python({**body, **self.fields(ts=ts, id=id)})
        return self.message(event)

    def last_will(self, status: TableStatus, *, ts: datetime) -> OutboxMessage:
        """The retained last will: this status with ``online: false``, a new id, ``ts``."""
        will = status.model_copy(update={"online": False, "id": new_id(), "ts": _utc_ms(ts)})
        return self.message(TableStatus.model_validate(will.model_dump()))
