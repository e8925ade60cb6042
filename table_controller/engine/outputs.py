"""What the table engine asks the world to do: publish, answer, show, light.

The engine returns these; the service executes them (journal, outbox, device
writes). An event's ``data`` is JSON-ready (str, int, bool, None, list, dict);
a round's record is a typed ``RoundRecord`` that the feed serialises.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple, TypeAlias

from table_controller.engine.records import RoundRecord


class EventType(StrEnum):
    SHOE_STARTED = "shoe_started"
    DEALER_CHANGED = "dealer_changed"
    BETS_CLOSED = "bets_closed"
    CARD = "card"
    DECISION = "decision"
    ROUND_SETTLED = "round_settled"
    ROUND_VOIDED = "round_voided"
    RESHUFFLE_DUE = "reshuffle_due"
    ALERT = "alert"
    # Raised by the service, not the engine: the game settings changed between shoes.
    SETTINGS_CHANGED = "settings_changed"


class Refusal(StrEnum):
    """Why the engine refused a console press (sent as ``$NAK,<k>,<REASON>``)."""

    NOT_NOW = "NOT_NOW"
    NO_WAR_WAGER = "NO_WAR_WAGER"
    BAD_POSITION = "BAD_POSITION"
    BAD_CARD = "BAD_CARD"
    UNKNOWN_ACTION = "UNKNOWN_ACTION"
    # DEALER without an id, or an argument where the action takes none.
    BAD_ARGUMENT = "BAD_ARGUMENT"
    # NO_MORE_BETS with no initial wager on the layout: there is no round to deal.
    NO_WAGERS = "NO_WAGERS"
    # A repeated press so old that its answer is no longer remembered.
    STALE_PRESS = "STALE_PRESS"
    # docs/rules.md rule 2: NO_MORE_BETS while the sensor board is offline.
    DEVICE_OFFLINE = "DEVICE_OFFLINE"
    # Given by the service, not the engine: the journal cannot commit (JOURNAL_FAULT).
    JOURNAL_FAULT = "JOURNAL_FAULT"


class Event(NamedTuple):
    """One ``table-event/1`` message body (without the envelope).

    ``seq`` starts at 1 and rises by exactly 1 for every event the engine ever
    emits; replaying the journal rebuilds it.
    """

    seq: int
    type: EventType
    round_id: int | None
    at: datetime
    data: Mapping[str, Any]


class ConsoleReply(NamedTuple):
    """The answer to press ``k``: ``reason`` None is ``ACK``, else ``NAK`` with that reason."""

    k: int
    reason: Refusal | None


class ConsoleShow(NamedTuple):
    """A line for the dealer console's display."""

    text: str


class SetLights(NamedTuple):
    """Light exactly these spot bits on the layout (0: all off)."""

    mask: int


class RoundRecorded(NamedTuple):
    """A finished round's ``war-round/1`` record (the feed adds the envelope)."""

    round_id: int
    record: RoundRecord


Output: TypeAlias = Event | ConsoleReply | ConsoleShow | SetLights | RoundRecorded
