"""``war-round/1``: the full record of one round on ``rounds`` (docs/feed.md, §5324.22(i)(4))."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, JsonValue, StrictBool, StrictInt

from table_controller.feed.common import (
    EPOCH_TEXT,
    FEED_SEQ_TEXT,
    POSITION_TEXT,
    ROUND_ID_TEXT,
    Card,
    CardRole,
    CardSource,
    Cents,
    Currency,
    Decision,
    Epoch,
    FeedSeq,
    Ident,
    NetCents,
    NetPerUnit,
    Odds,
    Outcome,
    Part,
    Payload,
    Position,
    RoundId,
    RulesName,
    Spot,
    Text,
    Timestamp,
    WagerResult,
    schema_field,
)
from table_controller.feed.events import NET_TEXT
from table_controller.feed.topics import Topic

_HASH = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class CardRecord(Part):
    n: Annotated[StrictInt, Field(ge=1)] = Field(description="the card's place in the round")
    card: Card | None = Field(
        description="the card, burns included (the record is the only place a burn's rank "
        "is kept); null only for a card never identified"
    )
    role: CardRole = Field(
        description="`burn`, `position`, `dealer`, `war_burn`, `war_position`, `war_dealer`"
    )
    position: Position | None = Field(description=POSITION_TEXT + "; null for others")
    source: CardSource = Field(
        description="`shoe` (read) or `manual` (entered at the console after a misread)"
    )


class DiscardRecord(Part):
    n: Annotated[StrictInt, Field(ge=1)] = Field(description="the card's read number")
    card: Card | None = Field(description="the card; null for one never identified")


class WagerRecord(Part):
    spot: Spot = Field(
        description="`initial`, `tie`, `war` or `war_tie` (the tie wager "
        "on the war deal, §5324.22(i)(5))"
    )
    amount: Cents | None = Field(
        description="the latched amount in cents of the table's currency; null on a "
        "presence-only board"
    )
    odds: Odds = Field(
        description="the odds it was paid at (`10:1`), or the posted odds when it did not win"
    )
    result: WagerResult = Field(description="`win`, `lose`, `push`, `surrender` or `void`")
    net_per_unit: NetPerUnit = Field(
        description="the player's net per unit of this wager: +10 for a won tie wager, -0.5 "
        "for a surrender, 0 for a push or a void"
    )
    net: NetCents | None = Field(
        description="the player's net on this wager in cents (positive: the player won); "
        "null when the amount is unknown"
    )


class PositionRecord(Part):
    position: Position = Field(description=POSITION_TEXT)
    card: Card | None = Field(description="the position's card of the original deal")
    outcome: Outcome | None = Field(
        description="the position's card against the dealer's: `win`, `lose` or `tie`"
    )
    decision: Decision | None = Field(
        description="after a tie: `surrender` or `war`; null without a tie"
    )
    war_card: Card | None = Field(description="the position's war card; null without a war")
    war_outcome: Outcome | None = Field(
        description="the war card against the dealer's war card; null without a war"
    )
    wagers: list[WagerRecord] = Field(description="every wager of the position, settled")
    net: NetCents | None = Field(
        description="the player's net at this position in cents (positive: the player "
        "won); null when amounts are unknown"
    )


class WarRound(Payload):
    """`rounds`: the full record of one round, enough to rebuild every hand (§(i)(4))."""

    TOPIC: ClassVar[Topic] = Topic.ROUNDS

    schema_: Literal["war-round/1"] = schema_field("war-round/1")
    round_id: RoundId = Field(description=ROUND_ID_TEXT)
    shoe_id: Ident | None = Field(description="the shoe the round was dealt from")
    dealer: Ident | None = Field(description="the dealer who dealt it")
    rules: RulesName = Field(description="the rules profile it was settled by")
    rules_overrides: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="the profile's fields the table's config overrides, by dotted path "
        "(`war.win`); empty when none",
    )
    feed_seq: FeedSeq | None = Field(default=None, description=FEED_SEQ_TEXT)
    epoch: Epoch | None = Field(
        default=None, description=EPOCH_TEXT + " (null until the table fills it)"
    )
    currency: Currency | None = Field(
        default=None, description="ISO 4217 code of every amount in this record"
    )
    prev_hash: _HASH | None = Field(
        default=None,
        description="the `hash` of the table's previous round record in this epoch; null "
        "for the first",
    )
    hash: _HASH | None = Field(
        default=None,
        description="SHA-256 (lower-case hex) of this record's RFC 8785 canonical JSON "
        "without its `hash` member: a record that does not verify, or a broken chain, "
        "was altered or lost",
    )
    started: Timestamp = Field(description="when the round opened for betting")
    ended: Timestamp = Field(description="when it was settled or voided")
    void: StrictBool = Field(description="the round was voided (`VOID_ROUND`, a misdeal)")
    void_reason: Text | None = Field(description="why it was voided; null when not")
    cards: list[CardRecord] = Field(description="every card of the round in deal order")
    dealer_card: Card | None = Field(description="the dealer's card")
    dealer_war_card: Card | None = Field(description="the dealer's war card; null without war")
    positions: list[PositionRecord] = Field(description="the playing positions, ascending")
    net: NetCents | None = Field(description=NET_TEXT)
    alerts: list[Ident] = Field(description="the `alert` ids raised during the round")
    discards: list[DiscardRecord] = Field(
        default_factory=list,
        exclude_if=lambda discards: not discards,
        description="cards read when none was due, set aside unplayed (UNEXPECTED_CARD); "
        "only the record names them (§5324.22(h)(1)); listed when any",
    )
