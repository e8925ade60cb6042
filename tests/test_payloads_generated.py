"""Payload models fed generated input (hypothesis): any round record and any event
round-trip through JSON, and garbage is refused with a ValueError only."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.feed.payloads import (
    BURN_ROLES,
    RFC3339_PATTERN,
    TABLE_EVENT,
    AlertCode,
    CardRole,
    Payload,
    WarRound,
    parse_payload,
)
from tests.payload_samples import ENV, SPEC_ROUND, body

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
