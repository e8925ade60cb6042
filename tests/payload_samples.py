"""Payloads for the payload models' tests: docs/feed.md's round record with its
elisions filled in, a table status, a card event, and the envelope of the table they
come from."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from table_controller.feed.examples import ROUND
from table_controller.service.envelope import Envelope

ENV = Envelope(table="war-07", site="main-floor", prefix="casino/main-floor/table/war-07")
TS = datetime(2025, 3, 1, 20, 15, tzinfo=UTC)

# docs/feed.md's round record, its elisions filled in: the shipped example.
SPEC_ROUND = json.dumps(ROUND, indent=2)


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
