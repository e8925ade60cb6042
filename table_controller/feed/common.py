"""What every payload shares: the strict base models, the envelope and the value types.

The domain's enums are the engine's (re-exported here): the payloads speak the
engine's words. Every field carries a description, which the shipped JSON Schemas
show to a third party reading the feed.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from fractions import Fraction
from typing import Annotated, Any, ClassVar, Final, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictInt,
    WithJsonSchema,
)

from table_controller.engine.domain import AlertCode as AlertCode
from table_controller.engine.domain import Decision as Decision
from table_controller.engine.domain import Outcome as Outcome
from table_controller.engine.domain import Phase as Phase
from table_controller.engine.domain import ResolvedBy as ResolvedBy
from table_controller.engine.domain import Role as CardRole
from table_controller.engine.domain import Severity as Severity
from table_controller.engine.domain import Source as CardSource
from table_controller.engine.domain import SpotKind as Spot
from table_controller.engine.records import WagerResult as WagerResult
from table_controller.engine.rules import RulesName as RulesName
from table_controller.feed.topics import TOPIC_RULES, Topic

__all__ = [
    "BURN_ROLES",
    "RFC3339_PATTERN",
    "AlertCode",
    "Card",
    "CardRole",
    "CardSource",
    "Cents",
    "Count",
    "Currency",
    "Decision",
    "DeviceCondition",
    "Epoch",
    "FeedSeq",
    "Ident",
    "NetCents",
    "NetPerUnit",
    "Odds",
    "Outcome",
    "Part",
    "Payload",
    "Phase",
    "Position",
    "ResolvedBy",
    "RoundId",
    "RulesName",
    "Severity",
    "Spot",
    "Text",
    "Timestamp",
    "WagerResult",
    "name_id",
    "new_id",
    "rfc3339",
    "schema_field",
    "utc_ms",
]


# -- value types -------------------------------------------------------------------


def _timestamp_in(value: object) -> object:
    # Only RFC 3339 text or an aware datetime: a bare number is not a timestamp here.
    if isinstance(value, str | datetime):
        return value
    raise ValueError("a timestamp is RFC 3339 text or a datetime")


def utc_ms(value: datetime) -> datetime:
    """``value`` in UTC, cut to milliseconds; a naive datetime is refused."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("a timestamp must carry its UTC offset")
    value = value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def rfc3339(value: datetime) -> str:
    """``value`` as docs/feed.md writes times: RFC 3339, UTC, milliseconds, ``Z``."""
    if value.tzinfo is UTC:
        # The common case, on a card's path: isoformat cuts to milliseconds as utc_ms does.
        return value.isoformat(timespec="milliseconds")[:-6] + "Z"
    return utc_ms(value).isoformat(timespec="milliseconds").replace("+00:00", "Z")


RFC3339_PATTERN: Final = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$"

Timestamp: TypeAlias = Annotated[
    datetime,
    BeforeValidator(_timestamp_in),
    AfterValidator(utc_ms),
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
    # docs/feed.md: a number, an int when whole (10), else a float (-0.5 for a surrender).
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
        description="rank then suit: 2-9, T, J, Q, K, A; C, D, H, S",
    ),
]
Position: TypeAlias = Annotated[StrictInt, Field(ge=1, le=10)]
Count: TypeAlias = Annotated[StrictInt, Field(ge=0)]
Cents: TypeAlias = Annotated[StrictInt, Field(ge=0)]
NetCents: TypeAlias = StrictInt
Odds: TypeAlias = Annotated[str, Field(pattern=r"^\d+:\d+$")]
Text: TypeAlias = Annotated[str, Field(min_length=1, max_length=1000)]
Ident: TypeAlias = Annotated[str, Field(min_length=1, max_length=128)]
RoundId: TypeAlias = Annotated[StrictInt, Field(ge=1)]
FeedSeq: TypeAlias = Annotated[StrictInt, Field(ge=1)]
Epoch: TypeAlias = Ident
Currency: TypeAlias = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]


BURN_ROLES: Final = frozenset({CardRole.BURN, CardRole.WAR_BURN})

# Descriptions used by several payloads, written once.
FEED_SEQ_TEXT: Final = (
    "the table's feed counter: +1 per message across `events`, `rounds` and `alerts` in "
    "outbox order, per `epoch`, surviving restarts; a subscriber that sees every `feed_seq` "
    "of an epoch has missed nothing (null until the table fills it)"
)
EPOCH_TEXT: Final = "the journal's identity: a new journal, a new epoch"
ROUND_ID_TEXT: Final = "the table's round number, +1 per round"
POSITION_TEXT: Final = "betting position, 1 farthest to the dealer's left (§5324.22(h)(3))"


class DeviceCondition(StrEnum):
    OK = "ok"
    OFFLINE = "offline"
    FAULT = "fault"


# -- models ---------------------------------------------------------------------


class Part(BaseModel):
    """A strict piece of a payload: unknown keys fail, nothing is coerced silently."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        json_schema_serialization_defaults_required=True,
    )


class Payload(Part):
    """The envelope every payload carries (docs/feed.md).

    A payload class names its ``TOPIC``; its ``SCHEMA`` (name/version) is the topic's,
    from :data:`~table_controller.feed.topics.TOPIC_RULES`.
    """

    SCHEMA: ClassVar[str]
    TOPIC: ClassVar[Topic]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        topic = cls.__dict__.get("TOPIC")
        if topic is not None:
            cls.SCHEMA = TOPIC_RULES[topic].schema

    schema_: str = Field(alias="schema", description="payload name/version")
    id: Ident = Field(description="unique per message; kept when the message is sent again")
    table: Ident = Field(description="the table's id: one whole topic level, its MQTT username")
    site: Ident = Field(description="the site (casino floor) the table belongs to")
    ts: Timestamp = Field(description="when the message was built: RFC 3339, UTC, milliseconds")

    def to_json(self) -> bytes:
        """The payload as published: compact JSON, UTF-8."""
        return self.model_dump_json().encode("utf-8")


def schema_field(name: str) -> Any:
    """The ``schema`` member of a payload whose name/version is ``name``."""
    return Field(default=name, alias="schema", description="payload name/version")


def new_id() -> str:
    """A fresh message id."""
    return str(uuid.uuid4())


def name_id(namespace: bytes, name: str) -> str:
    """The id derived from ``name`` in the 16-byte ``namespace``: ``str(uuid.uuid5(…))``.

    Written out because it is on a card's path: the same SHA-1 and bits, without
    building a ``UUID`` object on the way to its text.
    """
    if len(namespace) != 16:
        raise ValueError(f"a namespace is 16 bytes, not {len(namespace)}")
    digest = bytearray(
        hashlib.sha1(namespace + name.encode("utf-8"), usedforsecurity=False).digest()
    )
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # the RFC 4122 variant
    x = digest[:16].hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"
