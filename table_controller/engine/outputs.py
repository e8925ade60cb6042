"""What the table engine asks the world to do: publish, answer, show, light.

The engine returns these; the service executes them (journal, outbox, device
writes). Everything in ``data`` / ``record`` is JSON-ready: str, int, float,
bool, None, list and dict only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, TypeAlias


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


class NakReason(StrEnum):
    """Why a console press was refused (sent as ``$NAK,<k>,<REASON>``)."""

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
    # GAME.md JOURNAL_FAULT: the press was not acted on (answered by the service).
    JOURNAL_FAULT = "JOURNAL_FAULT"


@dataclass(frozen=True, slots=True)
class Event:
    """One ``table-event/1`` message body (without the envelope).

    ``seq`` starts at 1 and rises by exactly 1 for every event the engine ever
    emits; replaying the journal rebuilds it.
    """

    seq: int
    type: str
    round_id: int | None
    at: datetime
    data: Mapping[str, Any]


_EVENT_FIELDS: Final = ("seq", "type", "round_id", "at", "data")
assert tuple(f.name for f in fields(Event)) == _EVENT_FIELDS
# The slot setters of Event: the frozen dataclass's __init__ guards each field
# with object.__setattr__, which costs twice as much, and the engine makes an
# event for almost every input.
_new_object: Final = object.__new__
_SET_SEQ, _SET_TYPE, _SET_ROUND_ID, _SET_AT, _SET_DATA = (
    vars(Event)[name].__set__ for name in _EVENT_FIELDS
)


def new_event(
    seq: int, type_: str, round_id: int | None, at: datetime, data: Mapping[str, Any]
) -> Event:
    """``Event(seq, type_, round_id, at, data)``, the same value, built faster."""
    event: Event = _new_object(Event)
    _SET_SEQ(event, seq)
    _SET_TYPE(event, type_)
    _SET_ROUND_ID(event, round_id)
    _SET_AT(event, at)
    _SET_DATA(event, data)
    return event


@dataclass(frozen=True, slots=True)
class ConsoleReply:
    """The answer to press ``k``: ``reason`` None is ``ACK``, else ``NAK`` with that reason."""

    k: int
    reason: str | None


@dataclass(frozen=True, slots=True)
class ConsoleShow:
    """A line for the dealer console's display."""

    text: str


@dataclass(frozen=True, slots=True)
class SetLights:
    """Light exactly these spot bits on the layout (0: all off)."""

    mask: int


@dataclass(frozen=True, slots=True)
class RoundRecorded:
    """A ``war-round/1`` body without the envelope keys (schema, id, table, site, ts)."""

    round_id: int
    record: Mapping[str, Any]


Output: TypeAlias = Event | ConsoleReply | ConsoleShow | SetLights | RoundRecorded
