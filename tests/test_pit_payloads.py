"""Payloads as docs/feed.md describes them, written by hand for the pit tests.

They are built from the spec's words and its round record example, not from the
code that publishes them, so that the pit is checked against the interface.
The tests here check the builders themselves against the spec's example.
"""

from __future__ import annotations

import json
from typing import Any

SITE = "main-floor"
TABLE = "war-07"
TS = "2025-03-01T20:15:00Z"

# The round record example of docs/feed.md, with its elisions filled in.
ROUND_EXAMPLE = """
{
  "schema": "war-round/1", "id": "rec-1207", "table": "war-07", "site": "main-floor",
  "ts": "2025-03-01T20:15:00Z", "round_id": 1207, "shoe_id": "shoe-0042", "dealer": "D-114",
  "rules": "ny", "started": "2025-03-01T20:14:10Z", "ended": "2025-03-01T20:15:00Z",
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


def topic(kind: str, table: str = TABLE, site: str = SITE) -> str:
    """docs/feed.md: topics under `casino/{site}/table/{table}`."""
    return f"casino/{site}/table/{table}/{kind}"


def enc(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode("utf-8")


def _envelope(schema: str, table: str, site: str, ts: str) -> dict[str, Any]:
    return {"schema": schema, "table": table, "site": site, "ts": ts}


def status(
    *,
    online: bool = True,
    shoe: str = "ok",
    sensors: str = "ok",
    console: str = "ok",
    detail: str | None = None,
    depth: int = 0,
    oldest_age_s: float | None = None,
    table: str = TABLE,
    site: str = SITE,
    ts: str = TS,
    msg_id: str | None = None,
    instance: str | None = None,
    started: str | None = None,
) -> dict[str, Any]:
    """`table-status/1`: online, version, rules, decks, positions, devices, outbox, and
    the process's ``instance`` and ``started`` when given."""
    payload = {
        **_envelope("table-status/1", table, site, ts),
        "online": online,
        "version": "0.1.0",
        "rules": "ny",
        "decks": 6,
        "positions": 7,
        "devices": {
            "shoe": {"state": shoe, "detail": detail if shoe != "ok" else None},
            "sensors": {"state": sensors, "detail": detail if sensors != "ok" else None},
            "console": {"state": console, "detail": detail if console != "ok" else None},
        },
        "outbox": {"depth": depth, "oldest_age_s": oldest_age_s},
    }
    if msg_id is not None:
        payload["id"] = msg_id
    if instance is not None:
        payload.update(instance=instance, started=started or TS, currency="USD")
    return payload


def last_will(
    table: str = TABLE, site: str = SITE, ts: str = TS, *, instance: str | None = None
) -> dict[str, Any]:
    """The retained last will: `online: false` with the time of the connect."""
    will = {**_envelope("table-status/1", table, site, ts), "online": False}
    if instance is not None:
        will["instance"] = instance
    return will


def state(
    *,
    phase: str = "betting",
    round_id: int = 1207,
    held: bool = False,
    dealer: str = "D-114",
    cards_read: int = 41,
    cover_seen: bool = False,
    table: str = TABLE,
    site: str = SITE,
) -> dict[str, Any]:
    """`table-state/1`: phase, round_id, held, dealer, shoe, positions on the layout."""
    return {
        **_envelope("table-state/1", table, site, TS),
        "phase": phase,
        "round_id": round_id,
        "held": held,
        "dealer": dealer,
        "shoe": {"id": "shoe-0042", "cards_read": cards_read, "cover_seen": cover_seen},
        "positions": [
            {"position": 1, "wagers": {"initial": 2500, "tie": 500}, "cards": ["7H"]},
            {"position": 3, "wagers": {"initial": 1000}, "cards": []},
        ],
    }


def event(
    seq: int,
    *,
    epoch: str = "journal-a",
    kind: str = "bets_closed",
    round_id: int = 1207,
    msg_id: str | None = None,
    table: str = TABLE,
    site: str = SITE,
    **extra: Any,
) -> dict[str, Any]:
    """`table-event/1`: id, seq, epoch, round_id, type and the event's own fields."""
    return {
        **_envelope("table-event/1", table, site, TS),
        "id": msg_id if msg_id is not None else f"ev-{epoch}-{seq}",
        "seq": seq,
        "epoch": epoch,
        "round_id": round_id,
        "type": kind,
        **extra,
    }


def card_event(
    seq: int, n: int, card: str | None, role: str, position: int | None
) -> dict[str, Any]:
    """A `card` event; a burn's card is `null` on the live feed (§(h)(1))."""
    return event(seq, kind="card", n=n, card=card, role=role, position=position, source="shoe")


def round_record(
    round_id: int = 1207,
    *,
    msg_id: str | None = None,
    table: str = TABLE,
    site: str = SITE,
) -> dict[str, Any]:
    """The docs/feed.md example, renumbered."""
    record: dict[str, Any] = json.loads(ROUND_EXAMPLE)
    record["round_id"] = round_id
    record["id"] = msg_id if msg_id is not None else f"rec-{round_id}"
    record["table"] = table
    record["site"] = site
    return record


def void_record(round_id: int, reason: str = "misdeal") -> dict[str, Any]:
    """docs/rules.md: VOID_ROUND voids every latched wager: result void, net 0."""
    record = round_record(round_id)
    record["void"] = True
    record["void_reason"] = reason
    record["dealer_card"] = None
    position = record["positions"][0]
    position.update(outcome=None, decision=None, net=0)
    for wager in position["wagers"]:
        wager.update(result="void", net_per_unit=0, net=0)
    record["net"] = 0
    return record


def alert(
    alert_id: str,
    code: str = "PAST_POSTING",
    severity: str = "critical",
    *,
    resolved_by: str | None = None,
    msg_id: str | None = None,
    message: str = "chips added on a playing spot after no more bets",
    round_id: int | None = 1207,
    position: int | None = 2,
    spot: str | None = "initial",
    table: str = TABLE,
    site: str = SITE,
) -> dict[str, Any]:
    """`table-alert/1`: id, alert, code, severity, message, round_id, position, spot,
    resolved_by (null when raised)."""
    return {
        **_envelope("table-alert/1", table, site, TS),
        "id": msg_id if msg_id is not None else f"msg-{alert_id}-{resolved_by or 'raised'}",
        "alert": alert_id,
        "code": code,
        "severity": severity,
        "message": message,
        "round_id": round_id,
        "position": position,
        "spot": spot,
        "resolved_by": resolved_by,
    }


def stats(*, rounds: int = 120, table: str = TABLE, site: str = SITE) -> dict[str, Any]:
    """`table-stats/1`: rounds, rounds per hour, ties, wars, surrenders, voids, alerts by
    code; drop and win when amounts are known."""
    return {
        **_envelope("table-stats/1", table, site, TS),
        "rounds": rounds,
        "rounds_per_hour": 58.5,
        "ties": 9,
        "wars": 5,
        "surrenders": 4,
        "voids": 1,
        "alerts_by_code": {"PAST_POSTING": 2, "LATE_WAGER": 1},
        "drop": 1234500,
        "win": 45600,
    }


def test_round_example_is_the_spec_example() -> None:
    record = json.loads(ROUND_EXAMPLE)
    position = record["positions"][0]
    # The spec's own arithmetic: a surrender loses half of 25.00, the tie wager wins 10:1.
    assert sum(w["net"] for w in position["wagers"]) == position["net"] == record["net"]
    assert [c["role"] for c in record["cards"]] == ["burn", "position", "dealer"]


def test_builders_carry_the_envelope() -> None:
    for payload in (status(), last_will(), state(), event(1), round_record(), alert("a"), stats()):
        assert {"schema", "table", "site", "ts"} <= payload.keys()
        assert payload["schema"].endswith("/1")
