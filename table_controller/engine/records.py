"""The round record (``war-round/1`` without the envelope), as typed frozen values.

Enough to rebuild every hand (§(i)(4)): the cards in read order, each
position's cards, outcomes and decision, and each wager's amount, odds,
result and net. The feed turns a record into its JSON body.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from fractions import Fraction
from typing import NamedTuple

from table_controller.engine.domain import CardSlot, Decision, Outcome, SpotKind


class WagerResult(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"
    SURRENDER = "surrender"
    VOID = "void"


class WagerRecord(NamedTuple):
    """One wager settled: ``net`` = amount × net_per_unit in cents (None when unknown)."""

    spot: SpotKind
    amount: int | None
    odds: str
    result: WagerResult
    net_per_unit: Fraction
    net: int | None


class PositionRecord(NamedTuple):
    position: int
    card: str | None
    outcome: Outcome | None
    decision: Decision | None
    war_card: str | None
    war_outcome: Outcome | None
    wagers: tuple[WagerRecord, ...]
    net: int | None


class RoundRecord(NamedTuple):
    round_id: int
    shoe_id: str | None
    dealer: str | None
    rules: str
    # docs/rules.md: the config's overrides of the named profile (dotted key, value).
    rules_overrides: tuple[tuple[str, str | int | bool], ...]
    started: datetime
    ended: datetime
    void: bool
    void_reason: str | None
    cards: tuple[CardSlot, ...]
    dealer_card: str | None
    dealer_war_card: str | None
    positions: tuple[PositionRecord, ...]
    net: int | None
    alerts: tuple[str, ...]
    # docs/rules.md: cards set aside unplayed (UNEXPECTED_CARD), (n, card): only
    # the record names them, as any may be a burn card drawn early (§(h)(1)).
    discards: tuple[tuple[int, str | None], ...] = ()
