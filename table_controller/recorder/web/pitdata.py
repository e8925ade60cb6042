"""The pages' :class:`~table_controller.recorder.web.data.PitData` over the recorder's queries.

The same functions answer the JSON API, so a page and ``/api/…`` cannot
disagree. Two additions the pages need: each table's open critical alerts
themselves (the API's ``/api/tables`` counts them; a tile names their codes),
and the alerts of one table (its timeline).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from table_controller.recorder import queries
from table_controller.recorder.ratings.chain import findings
from table_controller.recorder.ratings.sessions import sessions
from table_controller.recorder.report import report
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.web.data import Json

CRITICAL: Final = "critical"


class StorePitData:
    """What the pages read, from the recorder's database."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    async def tables(self, site: str | None = None) -> list[Json]:
        open_critical: dict[tuple[str, str], list[Json]] = {}
        for a in await queries.alerts(self.db, open_only=True, site=site):
            if a["severity"] == CRITICAL:
                open_critical.setdefault((a["site"], a["table"]), []).append(a)
        return [
            t | {"open_critical": open_critical.get((t["site"], t["table"]), [])}
            for t in await queries.tables(self.db)
            if site is None or t["site"] == site
        ]

    async def rounds(
        self,
        site: str,
        table: str,
        *,
        last: int | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> list[Json]:
        return await queries.rounds(self.db, site, table, last=last, start=start, end=end)

    async def alerts(
        self, *, open_only: bool = False, site: str | None = None, table: str | None = None
    ) -> list[Json]:
        found = await queries.alerts(self.db, open_only=open_only, site=site)
        return [a for a in found if table is None or a["table"] == table]

    async def report(self, *, site: str | None, start: datetime, end: datetime) -> Json:
        return await report(self.db, site=site, start=start, end=end)

    async def sessions(
        self, site: str, table: str, *, start: datetime, end: datetime
    ) -> list[Json]:
        return await sessions(self.db, site=site, table=table, start=start, end=end)

    async def findings(self, site: str, table: str) -> list[Json]:
        return [f for f in await findings(self.db, site=site) if f["table"] == table]
