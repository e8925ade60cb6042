"""``table-alert/1`` on ``alerts`` and ``table-stats/1`` on ``stats`` (docs/feed.md)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from table_controller.feed.common import (
    EPOCH_TEXT,
    FEED_SEQ_TEXT,
    POSITION_TEXT,
    ROUND_ID_TEXT,
    AlertCode,
    Cents,
    Count,
    Epoch,
    FeedSeq,
    Ident,
    NetCents,
    Payload,
    Position,
    ResolvedBy,
    RoundId,
    Severity,
    Spot,
    Text,
    schema_field,
)
from table_controller.feed.topics import Topic


class TableAlert(Payload):
    """`alerts`: one message when an alert is raised, one more when it is resolved."""

    TOPIC: ClassVar[Topic] = Topic.ALERTS

    schema_: Literal["table-alert/1"] = schema_field("table-alert/1")
    feed_seq: FeedSeq | None = Field(default=None, description=FEED_SEQ_TEXT)
    epoch: Epoch | None = Field(
        default=None,
        description=EPOCH_TEXT + ": the epoch whose `feed_seq` this is (null with it, in a "
        "notice sent from memory while the journal cannot commit)",
    )
    alert: Ident = Field(description="the alert's own id (the same in both messages)")
    code: AlertCode = Field(description="what happened (docs/feed.md explains every code)")
    severity: Severity = Field(
        description="`critical`: the round is held until the alert is resolved; `warning` "
        "and `info` need no answer"
    )
    message: Text = Field(description="what happened and what to do, in words")
    round_id: RoundId | None = Field(
        description=ROUND_ID_TEXT + ": the round open when it was raised"
    )
    position: Position | None = Field(description=POSITION_TEXT + "; null when none")
    spot: Spot | None = Field(description="the spot concerned; null when none")
    resolved_by: ResolvedBy | None = Field(
        description="null when raised; when resolved: `CONFIRM` (the dealer), `CARD` (the "
        "dealer entered a misread card), `VOID_ROUND`, `DEVICE_ONLINE` (the device is back), "
        "`SNAPSHOT` (a sensor snapshot showed the latched amount again) or `JOURNAL` "
        "(commits succeed again)"
    )


class TableStats(Payload):
    """`stats` (retained): counts since the journal began."""

    TOPIC: ClassVar[Topic] = Topic.STATS

    schema_: Literal["table-stats/1"] = schema_field("table-stats/1")
    rounds: Count = Field(description="rounds settled or voided")
    rounds_per_hour: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        description="the pace of play; null before it can be measured"
    )
    ties: Count = Field(description="positions tied on the original deal")
    wars: Count = Field(description="positions that went to war")
    surrenders: Count = Field(description="positions that surrendered")
    voids: Count = Field(description="rounds voided")
    alerts_by_code: dict[AlertCode, Count] = Field(description="alerts raised, by code")
    drop: Cents | None = Field(
        description="cents of the table's currency wagered; null when amounts are unknown"
    )
    win: NetCents | None = Field(
        description="the HOUSE's win in cents of the table's currency: positive when the "
        "house won, so the opposite sign of a round's `net` (the players'); null when "
        "amounts are unknown"
    )
