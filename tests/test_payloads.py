"""Payload models against docs/feed.md: the spec's round record, strictness, numbers and
times, burn cards without rank, events of every type, and what recorders send."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from typing import Any

import pytest
from pydantic import ValidationError

from table_controller.feed.payloads import (
    BURN_ROLES,
    RFC3339_PATTERN,
    CardEvent,
    CardRole,
    TableStatus,
    WarRound,
    parse_payload,
    rfc3339,
)
from tests.payload_samples import ENV, SPEC_ROUND, TS, card, spec_round, status_body

# -- the spec's example ------------------------------------------------------------


def test_the_spec_round_record_validates_and_goes_out_unchanged() -> None:
    record = parse_payload(SPEC_ROUND.encode())
    assert isinstance(record, WarRound)
    assert json.loads(record.to_json()) == spec_round()
    # Keys in the spec's order.
    assert list(json.loads(record.to_json())) == list(spec_round())


def test_net_per_unit_is_an_int_when_whole() -> None:
    out = json.loads(WarRound.model_validate(spec_round()).to_json())
    wagers = out["positions"][0]["wagers"]
    assert wagers[0]["net_per_unit"] == -0.5
    assert type(wagers[1]["net_per_unit"]) is int
    # From the rules' fractions, and from a whole float.
    for given_npu, expected in ((Fraction(-1, 2), -0.5), (Fraction(3), 3), (2.0, 2), (-1, -1)):
        record = spec_round()
        record["positions"][0]["wagers"][1]["net_per_unit"] = given_npu
        npu = WarRound.model_validate(record).positions[0].wagers[1].net_per_unit
        assert npu == expected
        assert type(npu) is type(expected)


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ((), "bonus"),
        (("positions", 0), "hand_id"),
        (("positions", 0, "wagers", 1), "paid_by"),
        (("cards", 0), "face_up"),
    ],
)
def test_an_unknown_key_anywhere_fails(where: tuple[str | int, ...], key: str) -> None:
    record = spec_round()
    target: Any = record
    for step in where:
        target = target[step]
    target[key] = 1
    with pytest.raises(ValidationError, match=key):
        parse_payload(record)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("void",), "false"),
        (("round_id",), "1207"),
        (("net",), True),
        (("net",), 3750.0),
        (("positions", 0, "wagers", 0, "net_per_unit"), True),
        (("positions", 0, "wagers", 0, "net_per_unit"), "-0.5"),
        (("positions", 0, "wagers", 0, "amount"), -5),
        (("positions", 0, "wagers", 0, "result"), "lost"),
        (("positions", 0, "position"), 11),
        (("cards", 1, "card"), "7X"),
        (("cards", 1, "card"), "10H"),
        (("cards", 1, "role"), "player"),
        (("ts",), 1740860100),
        (("ts",), "2025-03-01T20:15:00"),
        (("rules",), "vegas"),
        (("schema",), "war-round/2"),
        (("positions", 0, "wagers", 0, "odds"), "even"),
    ],
)
def test_a_value_of_the_wrong_kind_fails(path: tuple[str | int, ...], value: Any) -> None:
    record = spec_round()
    target: Any = record
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(ValueError):  # noqa: PT011 - pydantic's or parse_payload's own
        parse_payload(record)


# Filled by the table's journal and publisher; optional until every producer sets them.
ROUND_KEYS_WITH_DEFAULTS = frozenset(
    {"rules_overrides", "feed_seq", "epoch", "currency", "prev_hash", "hash"}
)


def test_a_missing_key_fails() -> None:
    for key in spec_round():
        record = spec_round()
        del record[key]
        if key in ROUND_KEYS_WITH_DEFAULTS:
            assert key in json.loads(parse_payload(record).to_json())
            continue
        with pytest.raises(ValueError):  # noqa: PT011
            parse_payload(record)


# -- times ---------------------------------------------------------------------------


def test_times_go_out_as_rfc3339_utc_milliseconds() -> None:
    paris = timezone(timedelta(hours=1))
    local = datetime(2025, 3, 1, 21, 15, 0, 123456, tzinfo=paris)
    assert rfc3339(local) == "2025-03-01T20:15:00.123Z"
    message = ENV.status(status_body(), ts=local)
    out = json.loads(message.payload)
    assert out["ts"] == "2025-03-01T20:15:00.123Z"
    assert re.match(RFC3339_PATTERN, out["ts"])
    # Text with an offset is read as the same instant.
    again = TableStatus.model_validate({**out, "ts": "2025-03-01T21:15:00.123+01:00"})
    assert again.ts == datetime(2025, 3, 1, 20, 15, 0, 123000, tzinfo=UTC)


def test_a_time_without_offset_fails() -> None:
    with pytest.raises(ValidationError, match="UTC offset"):
        ENV.status(status_body(), ts=datetime(2025, 3, 1, 20, 15))


# -- events --------------------------------------------------------------------------


@pytest.mark.parametrize("role", sorted(BURN_ROLES))
def test_a_burn_card_is_published_without_its_rank(role: CardRole) -> None:
    ENV.event(card(role=role), ts=TS)
    with pytest.raises(ValidationError, match=r"§\(h\)\(1\)"):
        ENV.event(card(role=role, card="9C"), ts=TS)


def test_a_dealt_card_carries_its_rank() -> None:
    message = ENV.event(card(role="position", position=2, card="TD"), ts=TS)
    event = parse_payload(message.payload)
    assert isinstance(event, CardEvent)
    assert (event.card, event.position) == ("TD", 2)


def test_events_of_every_type_validate_and_unknown_types_fail() -> None:
    alert = {"alert": "A-1", "code": "MISREAD", "severity": "critical", "resolved_by": None}
    fields: dict[str, dict[str, Any]] = {
        "shoe_started": {"shoe_id": "S1"},
        "dealer_changed": {"dealer": "D-1"},
        "bets_closed": {"by": "no_more_bets", "positions": [1, 3]},
        "card": {"n": 2, "card": "AS", "role": "dealer", "position": None, "source": "manual"},
        "decision": {"position": 1, "decision": "war"},
        "round_settled": {"net": -2500},
        "round_voided": {"reason": "misdeal"},
        "reshuffle_due": {},
        "settings_changed": {"changed": ["decks"], "settings": {"decks": 8, "rules": "ny"}},
        "alert": alert,
    }
    for seq, (kind, extra) in enumerate(fields.items(), start=1):
        base = {"seq": seq, "epoch": "e-1", "round_id": None, "type": kind}
        message = ENV.event({**base, **extra}, ts=TS)
        assert message.topic.endswith("/events")
        assert parse_payload(message.payload).model_dump()["type"] == kind
    with pytest.raises(ValidationError):
        ENV.event({"seq": 1, "epoch": "e", "round_id": 1, "type": "jackpot"}, ts=TS)
    with pytest.raises(ValidationError, match="seq"):
        ENV.event({"seq": 0, "epoch": "e", "round_id": 1, "type": "reshuffle_due"}, ts=TS)


# -- what recorders send -------------------------------------------------------------


def _replay(first: int, last: int) -> dict[str, Any]:
    return {
        "schema": "table-replay/1",
        "table": "war-07",
        "site": "main-floor",
        "ts": "2025-03-01T20:16:30.004Z",
        "recorder": "recorder-1",
        "epoch": "e-1",
        "from_feed_seq": first,
        "to_feed_seq": last,
    }


def test_a_replay_asks_for_at_most_ten_thousand_messages_both_ends_included() -> None:
    assert parse_payload(_replay(1, 10_000)).model_dump()["to_feed_seq"] == 10_000
    assert parse_payload(_replay(7, 7)).model_dump()["id"] is None  # no id needed
    for first, last in ((1, 10_001), (8, 7), (0, 5)):
        with pytest.raises(ValidationError):
            parse_payload(_replay(first, last))


def test_an_ack_names_its_recorder_epoch_and_feed_seq() -> None:
    ack = {**_replay(1, 1), "schema": "table-ack/1", "feed_seq": 5120}
    del ack["from_feed_seq"], ack["to_feed_seq"]
    assert parse_payload(ack).model_dump()["feed_seq"] == 5120
    with pytest.raises(ValidationError):
        parse_payload({**ack, "feed_seq": 0})
