"""Payload models against docs/feed.md: the spec's round record, strictness, numbers and times,
burn cards without rank, envelopes and topics, and round trips of generated payloads."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from table_controller.feed.payloads import (
    BURN_ROLES,
    RFC3339_PATTERN,
    TABLE_EVENT,
    TOPIC_RULES,
    AlertCode,
    CardEvent,
    CardRole,
    Payload,
    TableStatus,
    Topic,
    WarRound,
    parse_payload,
    rfc3339,
)
from table_controller.service.config import parse_config
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


# -- envelopes and topics ---------------------------------------------------------------


def test_each_builder_puts_its_payload_on_its_topic_with_its_qos_and_retain() -> None:
    state = {
        "phase": "tie_decision",
        "round_id": 3,
        "held": True,
        "dealer": None,
        "shoe": {"id": None, "cards_read": 0, "cover_seen": False},
        "positions": [{"position": 1, "wagers": {"initial": None, "war": None}, "cards": ["7H"]}],
        "dealer_cards": ["7S"],
        "burn_cards": 1,
    }
    alert = {
        "alert": "A-1",
        "code": "PAST_POSTING",
        "severity": "critical",
        "message": "chips added after no more bets",
        "round_id": 3,
        "position": 1,
        "spot": "initial",
        "resolved_by": "CONFIRM",
    }
    stats = {
        "rounds": 2,
        "rounds_per_hour": None,
        "ties": 1,
        "wars": 0,
        "surrenders": 1,
        "voids": 0,
        "alerts_by_code": {"PAST_POSTING": 1},
        "drop": None,
        "win": None,
    }
    built = {
        Topic.STATUS: ENV.status(status_body(), ts=TS, id="st-1"),
        Topic.STATE: ENV.state(state, ts=TS, id="sa-1"),
        Topic.ROUNDS: ENV.round_record(body(spec_round()), ts=TS, id="r-1"),
        Topic.ALERTS: ENV.alert(alert, ts=TS, id="a-1"),
        Topic.STATS: ENV.stats(stats, ts=TS, id="s-1"),
        Topic.EVENTS: ENV.event(card(), ts=TS, id="e-1"),
    }
    for topic, message in built.items():
        rule = TOPIC_RULES[topic]
        assert message.topic == f"casino/main-floor/table/war-07/{topic.value}"
        assert (message.qos, message.retain) == (rule.qos, rule.retained)
        out = json.loads(message.payload)
        assert out["id"] == message.id
        assert (out["table"], out["site"], out["ts"]) == ("war-07", "main-floor", rfc3339(TS))
        assert parse_payload(message.payload).id == message.id
    # The spec's record: the same JSON with our envelope.
    record = json.loads(built[Topic.ROUNDS].payload)
    assert body(record) == body(spec_round())


def test_a_fresh_id_every_time_unless_given() -> None:
    first = ENV.status(status_body(), ts=TS)
    second = ENV.status(status_body(), ts=TS)
    assert first.id != second.id
    assert ENV.status(status_body(), ts=TS, id="x").id == "x"


def test_a_payload_of_another_table_is_not_published_as_ours() -> None:
    other = Envelope(table="war-08", site="main-floor", prefix="casino/main-floor/table/war-08")
    status = TableStatus.model_validate({**status_body(), **other.fields(ts=TS)})
    with pytest.raises(ValueError, match="war-08"):
        ENV.message(status)


def test_the_last_will_is_the_status_offline_with_its_own_id_and_time() -> None:
    status = TableStatus.model_validate({**status_body(), **ENV.fields(ts=TS, id="st-1")})
    later = TS + timedelta(minutes=5)
    will = ENV.last_will(status, ts=later)
    assert (will.topic, will.qos, will.retain) == (ENV.topic(Topic.STATUS), 1, True)
    out = json.loads(will.payload)
    assert out["online"] is False
    assert out["id"] != "st-1"
    assert out["ts"] == rfc3339(later)
    assert {k: v for k, v in out.items() if k not in ("online", "id", "ts")} == {
        k: v for k, v in json.loads(status.to_json()).items() if k not in ("online", "id", "ts")
    }


def test_the_envelope_comes_from_the_config() -> None:
    cfg = parse_config(
        {
            "table": {"id": "war-07", "site": "main-floor"},
            "devices": {"shoe": "socket://127.0.0.1:1", "console": "socket://127.0.0.1:2"},
            "storage": {"path": "/tmp/x.sqlite3"},
            "mqtt": {"topic_prefix": "pit/{site}/{table}"},
        }
    )
    env = Envelope.from_config(cfg)
    assert env == Envelope(table="war-07", site="main-floor", prefix="pit/main-floor/war-07")
    assert env.topic(Topic.ROUNDS) == "pit/main-floor/war-07/rounds"


def test_the_engine_s_own_enums_are_accepted() -> None:
    from enum import StrEnum

    class Code(StrEnum):  # as another module might name them
        MISREAD = "MISREAD"

    message = ENV.stats(
        {
            "rounds": 0,
            "rounds_per_hour": 0,
            "ties": 0,
            "wars": 0,
            "surrenders": 0,
            "voids": 0,
            "alerts_by_code": {Code.MISREAD: 2},
            "drop": 0,
            "win": 0,
        },
        ts=TS,
    )
    assert json.loads(message.payload)["alerts_by_code"] == {"MISREAD": 2}


# -- generated payloads ---------------------------------------------------------------------

CARDS = st.builds(lambda r, s: r + s, st.sampled_from("23456789TJQKA"), st.sampled_from("CDHS"))
POSITIONS = st.integers(1, 10)
CENTS = st.none() | st.integers(0, 10**7)
NPU = st.sampled_from([Fraction(-1, 2), Fraction(-1), Fraction(0), Fraction(1), 2, 3, 10, -0.5])
TIMES = st.datetimes(
    min_value=datetime(2020, 1, 1),
    max_value=datetime(2040, 1, 1),
    timezones=st.just(UTC),
)


@st.composite
def round_records(draw: st.DrawFn) -> dict[str, Any]:
    cards = [
        {
            "n": n,
            "card": draw(st.none() | CARDS),
            "role": draw(st.sampled_from(list(CardRole))).value,
            "position": draw(st.none() | POSITIONS),
            "source": draw(st.sampled_from(["shoe", "manual"])),
        }
        for n in range(1, draw(st.integers(0, 8)) + 1)
    ]
    positions = []
    for p in sorted(draw(st.sets(POSITIONS, max_size=4))):
        wagers = [
            {
                "spot": spot,
                "amount": draw(CENTS),
                "odds": draw(st.sampled_from(["1:1", "2:1", "3:1", "10:1"])),
                "result": draw(st.sampled_from(["win", "lose", "push", "surrender", "void"])),
                "net_per_unit": draw(NPU),
                "net": draw(st.none() | st.integers(-(10**7), 10**8)),
            }
            for spot in draw(
                st.lists(st.sampled_from(["initial", "tie", "war", "war_tie"]), max_size=4)
            )
        ]
        positions.append(
            {
                "position": p,
                "card": draw(st.none() | CARDS),
                "outcome": draw(st.none() | st.sampled_from(["win", "lose", "tie"])),
                "decision": draw(st.none() | st.sampled_from(["surrender", "war"])),
                "war_card": draw(st.none() | CARDS),
                "war_outcome": draw(st.none() | st.sampled_from(["win", "lose", "tie"])),
                "wagers": wagers,
                "net": draw(st.none() | st.integers(-(10**8), 10**8)),
            }
        )
    started = draw(TIMES)
    void = draw(st.booleans())
    return {
        "round_id": draw(st.integers(1, 10**9)),
        "shoe_id": draw(st.none() | st.text("ABCS0123456789-", min_size=1, max_size=20)),
        "dealer": draw(st.none() | st.text(min_size=1, max_size=20)),
        "rules": draw(st.sampled_from(["ny", "uk", "standard"])),
        "started": started,
        "ended": started + timedelta(seconds=draw(st.integers(0, 3600))),
        "void": void,
        "void_reason": draw(st.text(min_size=1, max_size=40)) if void else None,
        "cards": cards,
        "dealer_card": draw(st.none() | CARDS),
        "dealer_war_card": draw(st.none() | CARDS),
        "positions": positions,
        "net": draw(st.none() | st.integers(-(10**8), 10**8)),
        "alerts": draw(st.lists(st.text("ABC-0123456789", min_size=1, max_size=12))),
    }


@settings(max_examples=50)
@given(record=round_records(), ts=TIMES)
def test_any_round_record_round_trips_through_json(record: dict[str, Any], ts: datetime) -> None:
    message = ENV.round_record(record, ts=ts)
    again = parse_payload(message.payload)
    assert isinstance(again, WarRound)
    assert again.to_json() == message.payload
    out = json.loads(message.payload)
    for position in out["positions"]:
        for wager in position["wagers"]:
            npu = wager["net_per_unit"]
            assert isinstance(npu, int) or not float(npu).is_integer()
    assert re.match(RFC3339_PATTERN, out["started"])


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            [
                "shoe_started",
                "dealer_changed",
                "bets_closed",
                "card",
                "decision",
                "round_settled",
                "round_voided",
                "reshuffle_due",
                "settings_changed",
                "alert",
            ]
        )
    )
    base = {
        "seq": draw(st.integers(1, 2**40)),
        "epoch": draw(st.uuids()).hex,
        "feed_seq": draw(st.none() | st.integers(1, 2**40)),
        "round_id": draw(st.none() | st.integers(1, 10**6)),
        "type": kind,
    }
    role = draw(st.sampled_from(list(CardRole)))
    extras: dict[str, dict[str, Any]] = {
        "shoe_started": {"shoe_id": "S1"},
        "dealer_changed": {"dealer": draw(st.text(min_size=1, max_size=30))},
        "bets_closed": {
            "by": draw(st.sampled_from(["no_more_bets", "first_card"])),
            "positions": draw(st.lists(POSITIONS, max_size=7)),
        },
        "card": {
            "n": draw(st.integers(1, 500)),
            "card": None if role in BURN_ROLES else draw(st.none() | CARDS),
            "role": role.value,
            "position": draw(st.none() | POSITIONS),
            "source": "shoe",
        },
        "decision": {"position": draw(POSITIONS), "decision": draw(st.sampled_from(["war"]))},
        "round_settled": {"net": draw(st.none() | st.integers(-(10**8), 10**8))},
        "round_voided": {"reason": draw(st.none() | st.text(min_size=1, max_size=50))},
        "reshuffle_due": {},
        "settings_changed": {"changed": ["decks"], "settings": {"decks": draw(st.integers(1, 8))}},
        "alert": {
            "alert": "A-9",
            "code": draw(st.sampled_from(list(AlertCode))).value,
            "severity": draw(st.sampled_from(["critical", "warning", "info"])),
            "resolved_by": draw(st.none() | st.sampled_from(["CONFIRM", "CARD"])),
        },
    }
    return {**base, **extras[kind]}


@settings(max_examples=100)
@given(event=events(), ts=TIMES)
def test_any_event_round_trips_through_json(event: dict[str, Any], ts: datetime) -> None:
    message = ENV.event(event, ts=ts)
    again = parse_payload(message.payload)
    assert again.to_json() == message.payload
    assert body(json.loads(message.payload)) == body({**event})
    assert TABLE_EVENT.validate_json(message.payload) == again


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200)
@given(
    data=st.one_of(
        st.binary(max_size=200),
        JSON.map(lambda v: json.dumps(v).encode()),
        st.sampled_from([SPEC_ROUND.encode()]).map(lambda b: b[: len(b) // 2]),
    ),
    schema=st.sampled_from(
        ["war-round/1", "table-event/1", "table-status/1", "table-state/1", "x/1", None]
    ),
)
def test_garbage_is_refused_with_a_value_error_only(data: bytes, schema: str | None) -> None:
    candidates: list[bytes | dict[str, Any]] = [data]
    try:
        obj = json.loads(data)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        candidates.append({**obj, "schema": schema})
    for candidate in candidates:
        try:
            parsed = parse_payload(copy.deepcopy(candidate))
        except ValueError:
            continue
        assert isinstance(parsed, Payload)


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
