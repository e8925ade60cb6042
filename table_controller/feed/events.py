"""``table-event/1``: one message per event on ``events``, told apart by ``type`` (docs/feed.md)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Final, Literal, TypeAlias

from pydantic import Field, JsonValue, StrictBool, StrictInt, TypeAdapter, model_validator

from table_controller.feed.common import (
    BURN_ROLES,
    EPOCH_TEXT,
    FEED_SEQ_TEXT,
    POSITION_TEXT,
    ROUND_ID_TEXT,
    AlertCode,
    Card,
    CardRole,
    CardSource,
    Decision,
    Epoch,
    FeedSeq,
    Ident,
    NetCents,
    Payload,
    Position,
    ResolvedBy,
    RoundId,
    Severity,
    Text,
    schema_field,
)
from table_controller.feed.topics import Topic

NET_TEXT: Final = (
    "the PLAYERS' net of the round in cents of the table's currency: positive when the "
    "players won, so the opposite sign of the house's `win` in `stats`; null when amounts "
    "are unknown"
)


class _EventBase(Payload):
    TOPIC: ClassVar[Topic] = Topic.EVENTS

    schema_: Literal["table-event/1"] = schema_field("table-event/1")
    seq: Annotated[StrictInt, Field(ge=1)] = Field(
        description="per table and epoch, +1 each event, surviving restarts: a gap is a "
        "missed event"
    )
    epoch: Epoch = Field(description=EPOCH_TEXT)
    feed_seq: FeedSeq | None = Field(default=None, description=FEED_SEQ_TEXT)
    round_id: RoundId | None = Field(description=ROUND_ID_TEXT + "; null outside a round")


class ShoeStartedEvent(_EventBase):
    """The dealer pressed `SHUFFLED`: a new shoe, whose first card is burnt (§(h)(1))."""

    type: Literal["shoe_started"] = Field(description="the event's kind")
    shoe_id: Ident = Field(description="the new shoe's id")


class DealerChangedEvent(_EventBase):
    """A new dealer took the table (`DEALER`): one card is burnt for them (§(h)(1))."""

    type: Literal["dealer_changed"] = Field(description="the event's kind")
    dealer: Ident = Field(description="the new dealer's id")


class BetsClosedEvent(_EventBase):
    """Wagers are latched: what lies on the playing spots now is in action (§(h)(2))."""

    type: Literal["bets_closed"] = Field(description="the event's kind")
    by: Literal["no_more_bets", "first_card"] = Field(
        description="the dealer's NO_MORE_BETS (§(h)(2)) or the first card of the deal"
    )
    positions: list[Position] = Field(description="the playing positions")


class CardEvent(_EventBase):
    """A card taken, as in the round record; a burn card's rank is never shown (§(h)(1))."""

    type: Literal["card"] = Field(description="the event's kind")
    n: Annotated[StrictInt, Field(ge=1)] = Field(description="the card's place in the round")
    card: Card | None = Field(
        description="the card; null for a `burn` or `war_burn` (§5324.22(h)(1)), a card "
        "that may be a burn, and a misread waiting for the dealer"
    )
    role: CardRole = Field(
        description="`burn`, `position`, `dealer`, `war_burn`, `war_position`, `war_dealer`"
    )
    position: Position | None = Field(description=POSITION_TEXT + "; null for others")
    source: CardSource = Field(
        description="`shoe` (read) or `manual` (entered at the console after a misread)"
    )
    moved: StrictBool = Field(
        default=False,
        exclude_if=lambda moved: moved is False,
        description="published again with its new place after a SKIP (docs/rules.md); a "
        "subscriber keeps the latest event for a read number; only when true",
    )

    @model_validator(mode="after")
    def _burns_hidden(self) -> CardEvent:
        if self.role in BURN_ROLES and self.card is not None:
            raise ValueError("a burn card is published without its rank (§(h)(1)): card null")
        return self


class DecisionEvent(_EventBase):
    """A tied position chose (§(i)(3)): surrender half, or go to war."""

    type: Literal["decision"] = Field(description="the event's kind")
    position: Position = Field(description=POSITION_TEXT)
    decision: Decision = Field(description="`surrender` or `war`")


class RoundSettledEvent(_EventBase):
    """Every wager of the round is settled; its record goes to `rounds`."""

    type: Literal["round_settled"] = Field(description="the event's kind")
    net: NetCents | None = Field(description=NET_TEXT)


class RoundVoidedEvent(_EventBase):
    """The dealer voided the round (`VOID_ROUND`, a misdeal): every latched wager is void."""

    type: Literal["round_voided"] = Field(description="the event's kind")
    reason: Text | None = Field(description="why, in words; null when none was given")


class ReshuffleDueEvent(_EventBase):
    """The cover card came out (§(h)(4)): the round completes, then the shoe is reshuffled."""

    type: Literal["reshuffle_due"] = Field(description="the event's kind")


class SettingsChangedEvent(_EventBase):
    """The table's game settings changed (rules, decks, positions, limits), between shoes."""

    type: Literal["settings_changed"] = Field(description="the event's kind")
    changed: list[Ident] = Field(
        default_factory=list,
        description="the config keys that changed (`rules`, `decks`, `positions`, "
        "`limits.*`, `profile.*`)",
    )
    settings: dict[str, JsonValue] = Field(
        default_factory=dict, description="the game settings now in force, by config key"
    )


class AlertEvent(_EventBase):
    """An alert raised or resolved, in the event stream (its full message goes to `alerts`)."""

    type: Literal["alert"] = Field(description="the event's kind")
    alert: Ident = Field(description="the alert's own id, as in `alerts`")
    code: AlertCode = Field(description="what happened (docs/feed.md lists every code)")
    severity: Severity = Field(
        description="`critical` holds the round until resolved; `warning` and `info` need no answer"
    )
    resolved_by: ResolvedBy | None = Field(
        description="null when raised; how it was resolved otherwise (as in `alerts`)"
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
    | SettingsChangedEvent
    | AlertEvent,
    Field(discriminator="type"),
]
TABLE_EVENT: Final[TypeAdapter[TableEvent]] = TypeAdapter(TableEvent)


def parse_event(obj: Any) -> TableEvent:
    """A ``table-event/1`` payload validated as the model of its ``type``."""
    return TABLE_EVENT.validate_python(obj)
