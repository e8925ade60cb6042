"""The payloads' value helpers on a card's path, against the standard library's own:
message ids derived from a name (UUID version 5) and RFC 3339 times."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_controller.feed.common import name_id, rfc3339

SPACE = uuid.UUID("6f1d3c52-8a4e-4b8e-9a57-3c1f0e2d7b90")


@given(st.uuids(), st.text())
def test_a_name_id_is_the_standard_uuid5(namespace: uuid.UUID, name: str) -> None:
    assert name_id(namespace.bytes, name) == str(uuid.uuid5(namespace, name))


def test_a_name_id_of_an_event_is_stable() -> None:
    # The id a subscriber drops a duplicate by must not change between releases.
    assert name_id(SPACE.bytes, "war-07/e1/event/1") == str(uuid.uuid5(SPACE, "war-07/e1/event/1"))
    with pytest.raises(ValueError, match="16 bytes"):
        name_id(b"short", "x")


def _spelled_out(value: datetime) -> str:
    # The definition: the time in UTC, cut (not rounded) to milliseconds, with a Z.
    utc = value.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 2), max_value=datetime(9998, 12, 31), timezones=st.just(UTC)
    )
)
def test_rfc3339_of_a_utc_time(value: datetime) -> None:
    assert rfc3339(value) == _spelled_out(value)


@given(
    st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9998, 12, 31)),
    st.integers(min_value=-23 * 60, max_value=23 * 60),
)
def test_rfc3339_of_a_time_with_another_offset(value: datetime, minutes: int) -> None:
    aware = value.replace(tzinfo=timezone(timedelta(minutes=minutes)))
    assert rfc3339(aware) == _spelled_out(aware)


def test_rfc3339_refuses_a_naive_time() -> None:
    with pytest.raises(ValueError, match="UTC offset"):
        rfc3339(datetime(2026, 1, 1, 12))
