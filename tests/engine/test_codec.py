"""The journal form of inputs: exact round trip, through JSON text too; bad objects refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.engine import (
    CardRead,
    ConsolePress,
    CoverRead,
    DeviceOffline,
    DeviceOnline,
    Input,
    Misread,
    PressesRenumbered,
    PublishRefused,
    ReadGap,
    ServiceAlert,
    ShoeStatus,
    SpotsChanged,
    Tick,
    input_from_json,
    input_to_json,
)
from table_controller.engine.inputs import SERVICE_ALERT_CODES

times = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5)), timezone(timedelta(hours=2))]),
)
text = st.text(max_size=30)
ints = st.integers(min_value=-(2**40), max_value=2**40)
devices = st.sampled_from(["shoe", "console", "sensors"])
values = st.none() | st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 2**32 - 1)), max_size=14
).map(tuple)

inputs: st.SearchStrategy[Input] = st.one_of(
    st.builds(CardRead, times, ints, text),
    st.builds(Misread, times, ints),
    st.builds(CoverRead, times, ints),
    st.builds(ReadGap, times, ints, text),
    st.builds(SpotsChanged, times, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), values),
    st.builds(ConsolePress, times, ints, text, st.none() | text),
    st.builds(PressesRenumbered, times),
    st.builds(DeviceOnline, times, devices),
    st.builds(DeviceOffline, times, devices, text),
    st.builds(ShoeStatus, times, text),
    st.builds(PublishRefused, times, text, st.integers(0, 255), text),
    st.builds(
        ServiceAlert, times, text, st.sampled_from(SERVICE_ALERT_CODES), text, st.none() | text
    ),
    st.builds(Tick, times),
)


@settings(max_examples=400)
@given(inputs)
def test_round_trip_is_exact(inp: Input) -> None:
    d = input_to_json(inp)
    back = input_from_json(json.loads(json.dumps(d)))
    assert back == inp
    assert type(back) is type(inp)
    assert back.at.utcoffset() == inp.at.utcoffset()
    assert input_to_json(back) == d


def test_a_card_read_as_json() -> None:
    at = datetime(2024, 5, 1, 18, 0, 0, 123456, tzinfo=UTC)
    assert input_to_json(CardRead(at, 7, "TD")) == {
        "type": "card_read",
        "at": "2024-05-01T18:00:00.123456+00:00",
        "n": 7,
        "card": "TD",
    }


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"type": "nope", "at": "2024-05-01T18:00:00+00:00"},
        {"type": "card_read", "at": "2024-05-01T18:00:00+00:00", "n": "7", "card": "TD"},
        {"type": "card_read", "at": "2024-05-01T18:00:00+00:00", "n": True, "card": "TD"},
        {"type": "card_read", "at": "2024-05-01T18:00:00", "n": 7, "card": "TD"},
        {"type": "card_read", "at": "yesterday", "n": 7, "card": "TD"},
        {"type": "tick"},
        {"type": "device_online", "at": "2024-05-01T18:00:00+00:00", "device": "toaster"},
        {
            "type": "spots_changed",
            "at": "2024-05-01T18:00:00Z",
            "present": 1,
            "fault": 0,
            "values": [[1]],
        },
        {"type": "console_press", "at": "2024-05-01T18:00:00Z", "k": 1, "action": "X", "arg": 5},
        {
            "type": "service_alert",
            "at": "2024-05-01T18:00:00Z",
            "alert": "a1",
            "code": "PAST_POSTING",
            "message": "not one the service raises",
            "resolved_by": None,
        },
    ],
)
def test_malformed_input_objects_are_refused_with_a_reason(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="input"):
        input_from_json(bad)
