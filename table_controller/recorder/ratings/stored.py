"""The stored rounds the ratings read, oldest first, with each table's decks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from table_controller.recorder.queries import known, window
from table_controller.recorder.storable import read_json
from table_controller.recorder.store.backend import Backend

MAX_DECKS = 8  # table-status/1: decks 1..8

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredRound:
    site: str
    table: str
    record: Json
    decks: int | None  # from the table's latest status; None: the profile's default


async def table_decks(db: Backend) -> dict[tuple[str, str], int]:
    """Each table's decks, from its latest ``status`` (the round record has no decks)."""
    found: dict[tuple[str, str], int] = {}
    for site, table, payload in await db.fetch(
        "SELECT site, table_id, payload FROM latest WHERE topic = 'status'"
    ):
        decks = json.loads(payload).get("decks")
        if type(decks) is int and 1 <= decks <= MAX_DECKS:  # as table-status/1 allows
            found[(site, table)] = decks
    return found


async def stored_rounds(
    db: Backend,
    *,
    site: str | None = None,
    table: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[StoredRound]:
    """Rounds ended in [start, end), per table oldest first; UnknownTable for a table never
    seen."""
    if table is not None:
        if site is None:
            raise ValueError("a table is named with its site")
        await known(db, site, table)
    where, params = window("ended", site, start, end)
    if table is not None:
        where += " AND table_id = ?"
        params.append(table)
    decks = await table_decks(db)
    rows = await db.fetch(
        "SELECT site, table_id, record FROM rounds"
        + where
        + " ORDER BY site, table_id, ended, round_id",
        params,
    )
    return [StoredRound(s, t, read_json(r), decks.get((s, t))) for s, t, r in rows]
