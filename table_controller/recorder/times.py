"""Times as the recorder stores and accepts them: RFC 3339, UTC (``docs/recorder.md``)."""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime, timedelta

from table_controller.feed.payloads import rfc3339


def parse_time(value: object) -> datetime:
    """An RFC 3339 time with its offset; ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError("an RFC 3339 time, for example 2026-01-31T22:00:00Z")
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError as exc:
        raise ValueError(f"{value!r}: not an RFC 3339 time (2026-01-31T22:00:00Z)") from exc
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r}: give the UTC offset (Z or +01:00)")
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:  # year 1 an hour ahead of UTC, say
        raise ValueError(f"{value!r}: out of range") from exc


def bound_text(value: datetime) -> str:
    """A window's bound as stored times compare with it: rounded up to the millisecond.

    Stored times have milliseconds, so a bound inside one millisecond falls between it and
    the next: ``ended >= from`` and ``ended < to`` keep their meaning only if the bound
    goes to the next, never back to the one it is in (docs/recorder.md)."""
    extra = value.microsecond % 1000
    if extra:
        with suppress(OverflowError):  # the last millisecond of year 9999 stays
            value += timedelta(microseconds=1000 - extra)
    return rfc3339(value)


def now_text() -> str:
    return rfc3339(datetime.now(UTC))
