"""Payloads for the payload models' tests: docs/feed.md's round record with its
elisions filled in, a table status, a card event, and the envelope of the table they
come from."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from table_controller.service.envelope import Envelope

ENV = Envelope(table="war-07", site="main-floor", prefix="casino/main-floor/table/war-07")
TS = datetime(2025, 3, 1, 20, 15, tzinfo=UTC)

# docs/feed.md's round record, its elisions filled in.
SPEC_ROUND = """
{
  "schema": "war-round/1", "id": "rec-1207", "table": "war-07", "site": "main-floor",
  "ts": "2025-03-01T20:15:00.000Z", "round_id": 1207, "shoe_id": "S3-20250301T190000Z",
  "dealer": "D-114", "rules": "ny",
  "rules_overrides": {}, "feed_seq": 5120, "epoch": "0b9e6c1e-3f51-4a8e-9d7a-5b2f4c8e1a20",
  "currency": "USD",
  "prev_hash": "9f2c5d0e7b3a41c8e6f2a9d4b1c7e3f50a8d2b6c4e1f7a9b3d5c8e0f2a4b6c8d",
  "hash": "4be1a7c3e9d5f1b2a8c6e4d0f7b3a9c5e1d7f3b9a5c1e7d3f9b5a1c7e3d9f5b1",
  "started": "2025-03-01T20:14:10.000Z", "ended": "2025-03-01T20:15:00.000Z",
  "void": false, "void_reason": null,
  "cards": [
    {"n": 1, "card": "9C", "role": "burn", "position": null, "source": "shoe"},
    {"n": 2, "card": "7H", "role": "position", "position": 1, "source": "shoe"},
    {"n": 3, "card": "7S", "role": "dealer", "position": null, "source": "shoe"}
  ],
  "dealer_card": "7S", "dealer_war_card": null,
  "positions": [
    {"position": 1, "card": "7H", "outcome": "tie", "decision": "surrender",
     "war_card": null, "war_outcome": null,
     "wagers": [
       {"spot": "initial", "amount": 2500, "odds": "1:1", "result": "surrender",
        "net_per_unit": -0.5, "net": -1250},
       {"spot": "tie", "amount": 500, "odds": "10:1", "result": "win",
        "net_per_unit": 10, "net": 5000}
     ],
     "net": 3750}
  ],
  "net": 3750,
  "alerts": []
}
"""


def spec_round() -> dict[str, Any]:
    value = json.loads(SPEC_ROUND)
    assert isinstance(value, dict)
    return value


def body(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload without its envelope, as the engine hands it over."""
    return {k: v for k, v in payload.items() if k not in ("schema", "id", "table", "site", "ts")}


def status_body(**changes: Any) -> dict[str, Any]:
    ok = {"state": "ok", "detail": None}
    return {
        "online": True,
        "version": "0.1.0",
        "rules": "ny",
        "decks": 6,
        "positions": 7,
        "devices": {
            "shoe": ok,
            "sensors": {"state": "offline", "detail": "unplugged"},
            "console": ok,
        },
        "outbox": {"depth": 3, "oldest_age_s": 1.5},
        **changes,
    }


def card(**changes: Any) -> dict[str, Any]:
    return {
        "seq": 7,
        "epoch": "e-1",
        "round_id": 12,
        "type": "card",
        "n": 1,
        "card": None,
        "role": "burn",
        "position": None,
        "source": "shoe",
        **changes,
    }
