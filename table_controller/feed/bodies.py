"""A round record as its JSON body (``war-round/1`` without the envelope, docs/feed.md).

The engine hands out typed records (``table_controller.engine.RoundRecord``);
this is the one place that turns them into the body the feed publishes.
"""

from __future__ import annotations

from typing import Any

from table_controller.engine import (
    PositionRecord,
    RoundRecord,
    WagerRecord,
    card_json,
    npu_json,
)
from table_controller.engine.settlement import rfc3339


def wager_body(w: WagerRecord) -> dict[str, Any]:
    return {
        "spot": w.spot.value,
        "amount": w.amount,
        "odds": w.odds,
        "result": w.result.value,
        "net_per_unit": npu_json(w.net_per_unit),
        "net": w.net,
    }


def position_body(p: PositionRecord) -> dict[str, Any]:
    return {
        "position": p.position,
        "card": p.card,
        "outcome": None if p.outcome is None else p.outcome.value,
        "decision": None if p.decision is None else p.decision.value,
        "war_card": p.war_card,
        "war_outcome": None if p.war_outcome is None else p.war_outcome.value,
        "wagers": [wager_body(w) for w in p.wagers],
        "net": p.net,
    }


def record_body(r: RoundRecord) -> dict[str, Any]:
    """The JSON-ready body of a round record."""
    body: dict[str, Any] = {
        "round_id": r.round_id,
        "shoe_id": r.shoe_id,
        "dealer": r.dealer,
        "rules": r.rules,
        "rules_overrides": dict(r.rules_overrides),
        "started": rfc3339(r.started),
        "ended": rfc3339(r.ended),
        "void": r.void,
        "void_reason": r.void_reason,
        "cards": [card_json(c) for c in r.cards],
        "dealer_card": r.dealer_card,
        "dealer_war_card": r.dealer_war_card,
        "positions": [position_body(p) for p in r.positions],
        "net": r.net,
        "alerts": list(r.alerts),
    }
    if r.discards:
        # docs/rules.md: only the record names a card set aside (it may be a burn, §(h)(1)).
        body["discards"] = [{"n": n, "card": card} for n, card in r.discards]
    return body
