"""One example per payload, shown in the shipped JSON Schemas.

They tell one story: table ``war-07`` of site ``main-floor`` under ``ny`` rules,
round 1207, where position 1 ties the dealer's seven with 25.00 on the initial
wager and 5.00 on the tie wager, surrenders, and nets +37.50 (docs/feed.md's round
record). Every example is validated against its model and its shipped schema by
``tests/test_schema.py``, so none can drift from the interface.
"""

from __future__ import annotations

from typing import Any, Final

_ENVELOPE: Final = {"table": "war-07", "site": "main-floor"}
_EPOCH: Final = "0b9e6c1e-3f51-4a8e-9d7a-5b2f4c8e1a20"
_OK: Final = {"state": "ok", "detail": None}

STATUS: Final[dict[str, Any]] = {
    "schema": "table-status/1",
    "id": "5d0c9a51-2f0e-4c71-8d5e-0a4b8f3e2c61",
    **_ENVELOPE,
    "ts": "2025-03-01T20:15:00.412Z",
    "online": True,
    "version": "0.1.0",
    "rules": "ny",
    "decks": 6,
    "positions": 7,
    "devices": {
        "shoe": _OK,
        "sensors": {"state": "offline", "detail": "no heartbeat for 3 s"},
        "console": _OK,
    },
    "outbox": {"depth": 2, "oldest_age_s": 0.4},
    "currency": "USD",
    "instance": "7f3a9c2e5b1d",
    "started": "2025-03-01T18:02:11.093Z",
    "journal": {"state": "ok", "detail": None},
    "feed": {"epoch": _EPOCH, "last_feed_seq": 5121},
}

STATE: Final[dict[str, Any]] = {
    "schema": "table-state/1",
    "id": "c8e2f1a4-6b3d-4e9a-a7c5-1d0f2b8e4a93",
    **_ENVELOPE,
    "ts": "2025-03-01T20:14:52.180Z",
    "phase": "tie_decision",
    "round_id": 1207,
    "held": False,
    "dealer": "D-114",
    "shoe": {"id": "S3-20250301T190000Z", "cards_read": 212, "cover_seen": False},
    "positions": [
        {"position": 1, "wagers": {"initial": 2500, "tie": 500}, "cards": ["7H"]},
    ],
    "dealer_cards": ["7S"],
    "burn_cards": 0,
}

EVENT: Final[dict[str, Any]] = {
    "schema": "table-event/1",
    "id": "3a6f0d2b-9c4e-5b1a-8e7d-2c5f9a0b4e16",
    **_ENVELOPE,
    "ts": "2025-03-01T20:14:55.031Z",
    "seq": 48213,
    "epoch": _EPOCH,
    "feed_seq": 5118,
    "round_id": 1207,
    "type": "decision",
    "position": 1,
    "decision": "surrender",
}

ROUND: Final[dict[str, Any]] = {
    "schema": "war-round/1",
    "id": "e4b7c1d9-0a2f-5e3b-9c6d-8f1a4b7e2d05",
    **_ENVELOPE,
    "ts": "2025-03-01T20:15:00.000Z",
    "round_id": 1207,
    "shoe_id": "S3-20250301T190000Z",
    "dealer": "D-114",
    "rules": "ny",
    "rules_overrides": {},
    "feed_seq": 5120,
    "epoch": _EPOCH,
    "currency": "USD",
    "prev_hash": "9f2c5d0e7b3a41c8e6f2a9d4b1c7e3f50a8d2b6c4e1f7a9b3d5c8e0f2a4b6c8d",
    "hash": "4be1a7c3e9d5f1b2a8c6e4d0f7b3a9c5e1d7f3b9a5c1e7d3f9b5a1c7e3d9f5b1",
    "started": "2025-03-01T20:14:10.000Z",
    "ended": "2025-03-01T20:15:00.000Z",
    "void": False,
    "void_reason": None,
    "cards": [
        {"n": 1, "card": "9C", "role": "burn", "position": None, "source": "shoe"},
        {"n": 2, "card": "7H", "role": "position", "position": 1, "source": "shoe"},
        {"n": 3, "card": "7S", "role": "dealer", "position": None, "source": "shoe"},
    ],
    "dealer_card": "7S",
    "dealer_war_card": None,
    "positions": [
        {
            "position": 1,
            "card": "7H",
            "outcome": "tie",
            "decision": "surrender",
            "war_card": None,
            "war_outcome": None,
            "wagers": [
                {
                    "spot": "initial",
                    "amount": 2500,
                    "odds": "1:1",
                    "result": "surrender",
                    "net_per_unit": -0.5,
                    "net": -1250,
                },
                {
                    "spot": "tie",
                    "amount": 500,
                    "odds": "10:1",
                    "result": "win",
                    "net_per_unit": 10,
                    "net": 5000,
                },
            ],
            "net": 3750,
        }
    ],
    "net": 3750,
    "alerts": [],
}

ALERT: Final[dict[str, Any]] = {
    "schema": "table-alert/1",
    "id": "71c0e5a8-4d2b-5f9e-b3a6-0e8d1c4f7a29",
    **_ENVELOPE,
    "ts": "2025-03-01T20:13:02.557Z",
    "feed_seq": 5102,
    "epoch": _EPOCH,
    "alert": "0d5e8b3f-1a7c-5c2e-9f4b-6a3d0e9c8b71",
    "code": "DEVICE_OFFLINE",
    "severity": "critical",
    "message": "sensors offline: no heartbeat for 3 s; the round is held until it is back",
    "round_id": 1206,
    "position": None,
    "spot": None,
    "resolved_by": None,
}

STATS: Final[dict[str, Any]] = {
    "schema": "table-stats/1",
    "id": "a2d9f4c7-8e1b-4a6d-b0c3-5f7e2a9d1c84",
    **_ENVELOPE,
    "ts": "2025-03-01T20:15:00.415Z",
    "rounds": 1207,
    "rounds_per_hour": 118.4,
    "ties": 96,
    "wars": 71,
    "surrenders": 25,
    "voids": 2,
    "alerts_by_code": {"DEVICE_OFFLINE": 1, "MISREAD": 3, "LATE_WAGER": 4},
    "drop": 4816500,
    "win": 93250,
}

ACK: Final[dict[str, Any]] = {
    "schema": "table-ack/1",
    "id": "f1e8c3b6-2a9d-4d7f-8b5e-3c0a6f9d2e47",
    **_ENVELOPE,
    "ts": "2025-03-01T20:15:00.902Z",
    "recorder": "recorder-1",
    "epoch": _EPOCH,
    "feed_seq": 5120,
}

REPLAY: Final[dict[str, Any]] = {
    "schema": "table-replay/1",
    "id": "9b4e7a1d-5c8f-4e2b-a6d3-0f9c2e5b8a16",
    **_ENVELOPE,
    "ts": "2025-03-01T20:16:30.004Z",
    "recorder": "recorder-1",
    "epoch": _EPOCH,
    "from_feed_seq": 5095,
    "to_feed_seq": 5101,
}

EXAMPLES: Final[dict[str, dict[str, Any]]] = {
    example["schema"]: example
    for example in (STATUS, STATE, EVENT, ROUND, ALERT, STATS, ACK, REPLAY)
}
"""Payload name → its example."""
