"""What a scenario's expectations check: the fields of ``state``, alerts, round records.

Only the fields a file gives are compared (``Strict.given``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from table_controller.engine import AlertCode, Decision, Outcome, Phase, ResolvedBy, Role, Severity
from table_controller.engine.rules import RulesName
from table_controller.rigs.scenario.fields import Cents, PlainCard, Position, Strict

WagerSpot = Literal["initial", "tie", "war", "war_tie"]
WagerResult = Literal["win", "lose", "push", "surrender", "void"]


class StateExpect(Strict):
    """The controller's latest ``state``: only the fields given are checked."""

    phase: Phase | None = None
    held: bool | None = None
    dealer: str | None = None
    round_id: int | None = None
    cover_seen: bool | None = None
    burn_cards: int | None = None
    dealer_cards: list[PlainCard] | None = None


class AlertExpect(Strict):
    """An alert message; without ``resolved_by``, the message that raised the alert."""

    code: AlertCode
    severity: Severity | None = None
    position: Position | None = None
    spot: WagerSpot | None = None
    resolved_by: ResolvedBy | None = None
    message: str | None = None
    """Text that the alert's message contains."""

    @model_validator(mode="before")
    @classmethod
    def _code_alone(cls, data: Any) -> Any:
        return {"code": data} if isinstance(data, str) else data


class WagerExpect(Strict):
    amount: Cents | None = None
    odds: Annotated[str, Field(pattern=r"^\d+:\d+$")] | None = None
    result: WagerResult | None = None
    net_per_unit: float | None = None
    net: int | None = None


class PositionExpect(Strict):
    card: PlainCard | None = None
    outcome: Outcome | None = None
    decision: Decision | None = None
    war_card: PlainCard | None = None
    war_outcome: Outcome | None = None
    net: int | None = None
    initial: WagerExpect | None = None
    tie: WagerExpect | None = None
    war: WagerExpect | None = None
    war_tie: WagerExpect | None = None


class CardExpect(Strict):
    """A card of the record: a mapping, or ``"9C burn"``, ``"7H position 1"``,
    ``"JH position 1 manual"``, ``"- burn"`` (a card whose rank is unknown)."""

    card: PlainCard | None = None
    role: Role | None = None
    position: Position | None = None
    source: Literal["shoe", "manual"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        if not isinstance(data, str):
            return data
        words = data.split()
        if len(words) < 2:
            raise ValueError(f"a card is 'CARD ROLE [POSITION] [SOURCE]', not {data!r}")
        out: dict[str, Any] = {
            "card": None if words[0] in ("-", "?") else words[0],
            "role": words[1],
            "position": None,
        }
        rest = words[2:]
        if rest and rest[0].isdecimal():
            out["position"] = int(rest.pop(0))
        if rest:
            out["source"] = rest.pop(0)
        if rest:
            raise ValueError(f"a card is 'CARD ROLE [POSITION] [SOURCE]', not {data!r}")
        return out


class RoundExpect(Strict):
    """A round record (``war-round/1``): only the fields given are checked; ``null`` for
    a position or a wager means that it must not be in the record."""

    round_id: int | None = None
    void: bool | None = None
    dealer: str | None = None
    rules: RulesName | None = None
    net: int | None = None
    dealer_card: PlainCard | None = None
    dealer_war_card: PlainCard | None = None
    cards: list[CardExpect] | None = None
    positions: dict[Position, PositionExpect | None] | None = None
    alerts: list[AlertCode] | None = None
    """The codes of the alerts raised in the round, in any order."""
