"""The retained pictures of a table: ``table-status/1`` and ``table-state/1`` (docs/feed.md)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt

from table_controller.feed.common import (
    EPOCH_TEXT,
    POSITION_TEXT,
    ROUND_ID_TEXT,
    Card,
    Cents,
    Count,
    Currency,
    DeviceCondition,
    Epoch,
    Ident,
    Part,
    Payload,
    Phase,
    Position,
    RoundId,
    RulesName,
    Spot,
    Text,
    Timestamp,
    schema_field,
)
from table_controller.feed.topics import Topic

# table-status/1 ----------------------------------------------------------------


class DeviceStatus(Part):
    state: DeviceCondition = Field(
        description="`ok`; `offline` (its link closed or it sent no heartbeat for 3 s); "
        "`fault` (it reports a fault, such as the shoe's door open)"
    )
    detail: str | None = Field(description="what is wrong, in words; null when `ok`")


class Devices(Part):
    shoe: DeviceStatus = Field(description="the card-reading shoe")
    sensors: DeviceStatus = Field(description="the bet-sensor board under the layout")
    console: DeviceStatus = Field(description="the dealer's console")


class OutboxFigures(Part):
    depth: Count = Field(description="messages waiting in the table's outbox for the broker")
    oldest_age_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        description="seconds the oldest waiting message has waited; null when none waits"
    )


class JournalCondition(Part):
    state: Literal["ok", "fault"] = Field(
        description="`fault` while the journal cannot commit (alert `JOURNAL_FAULT`): "
        "inputs are not acted on until it can"
    )
    detail: str | None = Field(description="the journal's error, in words; null when `ok`")


class FeedPosition(Part):
    epoch: Epoch = Field(description=EPOCH_TEXT)
    last_feed_seq: Annotated[StrictInt, Field(ge=0)] = Field(
        description="the newest `feed_seq` the table has enqueued (0 before the first), so "
        "that a recorder sees a lost tail too"
    )


class TableStatus(Payload):
    """`status` (retained): the table and its devices; `online: false` is the last will."""

    TOPIC: ClassVar[Topic] = Topic.STATUS

    schema_: Literal["table-status/1"] = schema_field("table-status/1")
    online: StrictBool = Field(
        description="false in the retained last will and on a clean shutdown"
    )
    version: Text = Field(description="the table controller's software version")
    rules: RulesName = Field(description="the rules profile in force (docs/rules.md)")
    decks: Annotated[StrictInt, Field(ge=1, le=8)] = Field(description="decks in the shoe")
    positions: Position = Field(description="betting positions at the table")
    devices: Devices = Field(description="each device's state")
    outbox: OutboxFigures = Field(description="what waits to be published")
    currency: Currency | None = Field(
        default=None,
        description="ISO 4217 code of the table's currency: every amount in cents on every "
        "topic of this table is in it",
    )
    instance: Ident | None = Field(
        default=None,
        description="a random id per process start: two controllers configured as the same "
        "table tell each other apart by it (the later one yields)",
    )
    started: Timestamp | None = Field(
        default=None, description="when this process started (RFC 3339, UTC)"
    )
    journal: JournalCondition | None = Field(
        default=None, description="whether the table's journal commits"
    )
    feed: FeedPosition | None = Field(
        default=None, description="the table's feed counter, for recorders"
    )


# table-state/1 -----------------------------------------------------------------


class ShoeView(Part):
    id: Ident | None = Field(description="the shoe in play; null before the first `SHUFFLED`")
    cards_read: Count = Field(description="cards read from this shoe so far, burns included")
    cover_seen: StrictBool = Field(
        description="the cover card came out: reshuffle after this round (§5324.22(h)(4))"
    )


class PositionView(Part):
    position: Position = Field(description=POSITION_TEXT)
    wagers: dict[Spot, Cents | None] = Field(
        description="chips on each spot (`initial`, `tie`, `war`, `war_tie`): cents of the "
        "table's currency, null on a presence-only board"
    )
    cards: list[Card | None] = Field(
        description="the position's cards in deal order; null while a misread waits"
    )


class TableState(Payload):
    """`state` (retained): the layout now. Burn cards as a count, never a rank (§(h)(1))."""

    TOPIC: ClassVar[Topic] = Topic.STATE

    schema_: Literal["table-state/1"] = schema_field("table-state/1")
    phase: Phase = Field(
        description="where the round is: `shuffle_due` (waiting for `SHUFFLED`), `betting`, "
        "`dealing`, `tie_decision` (tied positions choose war or surrender), `war_dealing`"
    )
    round_id: RoundId = Field(description=ROUND_ID_TEXT + "; the round open now")
    held: StrictBool = Field(
        description="true while a critical alert holds the round: nothing is settled until "
        "the dealer resolves it"
    )
    dealer: Ident | None = Field(description="the dealer on the table; null before the first")
    shoe: ShoeView = Field(description="the shoe in play")
    positions: list[PositionView] = Field(
        description="the positions with chips or cards on the layout, ascending"
    )
    dealer_cards: list[Card | None] = Field(
        description="the dealer's card, then the dealer's war card"
    )
    burn_cards: Count = Field(
        description="burn cards dealt this round, counted only: a burn's rank is never "
        "shown (§5324.22(h)(1))"
    )
