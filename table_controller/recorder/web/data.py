"""What the pages read: the recorder's queries, as the JSON API answers them.

The pages never run SQL: they ask a :class:`PitData` (the recorder's store
implements it) for the same JSON values that ``/api/…`` returns, so a page and
the API cannot disagree. Shapes (amounts in integer cents, times RFC 3339 UTC):

- ``tables``: ``[{site, table, status, state, stats, last_seen, open_critical}]``,
  ``status``/``state``/``stats`` the latest ``table-status/1``, ``table-state/1``,
  ``table-stats/1`` payloads (or null), ``open_critical`` a list of alerts as below;
- ``rounds``: ``war-round/1`` records, newest first;
- ``alerts``: ``[{site, table, alert, code, severity, message, round_id, position,
  spot, raised, resolved, resolved_by}]``, newest first;
- ``report``: ``{from, to, tables: [row], total: row}``, a row holding ``site``,
  ``table`` (not in ``total``), ``rounds``, ``rounds_per_hour``, ``handle``, ``win``,
  ``hold``, ``ties``, ``wars``, ``surrenders``, ``voids``, ``alerts_by_code``;
- ``sessions``: ``/api/sessions`` rows (position, start, minutes, rounds, average_bet,
  theo, actual, open, ...).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

Json = dict[str, Any]


class PitData(Protocol):
    """The recorder's read side, as the pages need it."""

    async def tables(self, site: str | None = None) -> list[Json]: ...

    async def rounds(
        self,
        site: str,
        table: str,
        *,
        last: int | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> list[Json]: ...

    async def alerts(
        self, *, open_only: bool = False, site: str | None = None, table: str | None = None
    ) -> list[Json]: ...

    async def report(self, *, site: str | None, start: datetime, end: datetime) -> Json: ...

    async def sessions(
        self, site: str, table: str, *, start: datetime, end: datetime
    ) -> list[Json]:
        """``/api/sessions`` of one table: its seat sessions with theo."""
        ...

    async def findings(self, site: str, table: str) -> list[Json]:
        """``/api/findings`` of one table: breaks in its records' hash chain."""
        ...


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time as an aware UTC datetime; None for None or bad text."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    except (ValueError, OverflowError):  # OverflowError: out of range once in UTC
        return None
