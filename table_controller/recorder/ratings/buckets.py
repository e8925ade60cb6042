"""A window's rounds summed in ten-minute slots, each slot read once while its count holds.

Theo and hold (:mod:`hold`) and pace (:mod:`pace`) read every round ended in
their window. A floor of fifty tables deals some 150,000 rounds a day, and an
open floor page asks for today's report on every update, up to four times a
second: reading and pricing every record of the day each time does not keep
up. Stored rounds are never changed, only added (and, by retention, removed
whole days old), so each table's rounds ended in one ten-minute slot of the
stored ``ended`` text are summed once and the sum kept under the number of
rounds it holds. A later window asks the database only how many rounds each
slot holds now (one ``GROUP BY``); a slot whose count has not moved is
summed already, and only the slots that gained a round (the one just dealt, a
late one a replay brought) are read again.

A slot is cut to the window: its sum is kept under where it starts in the
window, how many rounds it holds and the last ``ended`` among them. Two windows
that start a slot alike and whose rounds end last alike hold every round of that
span stored by their time: nested sets, so the same count means the same rounds,
even when a replay brought one late into the slot (the count alone could then
match another set, cut earlier).

The first window of a day reads every round of it (a second or more at fifty
tables). The records are parsed and priced on a worker thread, so the event loop
goes on storing what the tables send and answering the pages meanwhile; and one
database's windows are summed one at a time, so that the floor pages that ask at
once (a recorder started in the middle of a shift) wait for the one reading and
then find its slots kept, instead of each reading the whole day again.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final
from weakref import WeakKeyDictionary

from table_controller.feed.payloads import rfc3339
from table_controller.recorder.queries import window
from table_controller.recorder.ratings.edges import priced
from table_controller.recorder.ratings.sessions import initial_wager
from table_controller.recorder.ratings.stored import table_decks
from table_controller.recorder.ratings.tally import Tally
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.times import bound_text, parse_time

Json = dict[str, Any]
SLOT_CHARS: Final = 15  # "2026-03-02T06:4": ten minutes of the stored RFC 3339 text
SLOT: Final = timedelta(minutes=10)
KEPT: Final = 50_000  # slots: fifty tables' two weeks
_COUNTS: Final = (
    f"SELECT site, table_id, substr(ended, 1, {SLOT_CHARS}), COUNT(*), MAX(ended) FROM rounds"
)
_GROUP: Final = f" GROUP BY site, table_id, substr(ended, 1, {SLOT_CHARS})"
_READ: Final = (
    "SELECT ended, record FROM rounds WHERE site = ? AND table_id = ? AND ended >= ? AND ended < ?"
)

# site, table, where it starts, (rounds, the last ended), decks
_Key = tuple[str, str, str, tuple[int, str], int | None]


@dataclass(slots=True)
class Summary:
    """What hold and pace need of some rounds of one table."""

    tally: Tally = field(default_factory=Tally)  # the positions that played, priced
    started: list[datetime] = field(default_factory=list)  # each round dealt: its start
    last_ended: datetime | None = None  # of the rounds dealt

    def add(self, record: Json, decks: int | None) -> None:
        if record.get("void"):
            return  # never dealt: no theo, no pace (a table with only these is still seen)
        positions = [p for p in record.get("positions", []) if initial_wager(p)]
        if positions:
            edges = priced(record, decks)
            for p in positions:
                self.tally.add(p, edges)
        self.started.append(parse_time(record.get("started") or record["ended"]))
        ended = parse_time(record["ended"])
        if self.last_ended is None or ended > self.last_ended:
            self.last_ended = ended

    def merge(self, other: Summary) -> None:
        self.tally.merge(other.tally)
        self.started += other.started
        if other.last_ended is not None and (
            self.last_ended is None or other.last_ended > self.last_ended
        ):
            self.last_ended = other.last_ended


class _Kept:
    """The slots summed, the least recently asked for dropped first; ``lock`` is held
    while one window of the database is summed."""

    def __init__(self) -> None:
        self._items: OrderedDict[_Key, Summary] = OrderedDict()
        self.lock = asyncio.Lock()

    def get(self, key: _Key) -> Summary | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: _Key, summary: Summary) -> None:
        self._items[key] = summary
        self._items.move_to_end(key)
        while len(self._items) > KEPT:
            self._items.popitem(last=False)


_BY_DATABASE: WeakKeyDictionary[Backend, _Kept] = WeakKeyDictionary()


def _summed(
    rows: list[tuple[Any, ...]], slots: list[str], decks: int | None
) -> tuple[dict[str, Summary], dict[str, tuple[int, str]]]:
    """``rows`` (``ended``, ``record``) summed by slot, and how many each slot held and
    their last ``ended``: on a worker thread, off the event loop."""
    read: dict[str, Summary] = {slot: Summary() for slot in slots}
    counted: dict[str, tuple[int, str]] = dict.fromkeys(read, (0, ""))
    for ended, record in rows:
        slot = ended[:SLOT_CHARS]
        read.setdefault(slot, Summary()).add(json.loads(record), decks)
        n, last = counted.get(slot, (0, ""))
        counted[slot] = (n + 1, max(last, ended))
    return read, counted


def _slot_start(slot: str) -> str:
    return f"{slot}0:00.000Z"


def _slot_end(slot: str) -> str:
    return rfc3339(parse_time(_slot_start(slot)) + SLOT)


async def summaries(
    db: Backend,
    *,
    site: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> dict[tuple[str, str], Summary]:
    """Per table with a round ended in [start, end): what hold and pace need of them."""
    kept = _BY_DATABASE.get(db)
    if kept is None:
        kept = _BY_DATABASE[db] = _Kept()
    async with kept.lock:
        return await _summaries(db, kept, site, start, end)


async def _summaries(
    db: Backend,
    kept: _Kept,
    site: str | None,
    start: datetime | None,
    end: datetime | None,
) -> dict[tuple[str, str], Summary]:
    where, params = window("ended", site, start, end)
    counts = await db.fetch(_COUNTS + where + _GROUP, params)
    decks = await table_decks(db)
    lo_bound = None if start is None else bound_text(start)
    hi_bound = None if end is None else bound_text(end)
    parts: dict[tuple[str, str], list[Summary]] = {}
    runs: dict[tuple[str, str], list[list[tuple[str, str]]]] = {}  # runs of slots to read
    for s, t, slot, n, last in sorted(counts):
        lo = _slot_start(slot) if lo_bound is None else max(_slot_start(slot), lo_bound)
        hit = kept.get((s, t, lo, (int(n), last), decks.get((s, t))))
        table_runs = runs.setdefault((s, t), [[]])
        parts.setdefault((s, t), [])
        if hit is None:
            table_runs[-1].append((slot, lo))
        else:
            parts[(s, t)].append(hit)
            if table_runs[-1]:
                table_runs.append([])  # a slot summed already ends the run of reads
    for (s, t), table_runs in runs.items():
        for run in (r for r in table_runs if r):
            hi = _slot_end(run[-1][0])
            if hi_bound is not None:
                hi = min(hi, hi_bound)
            rows = await db.fetch(_READ, (s, t, run[0][1], hi))
            read, counted = await asyncio.to_thread(
                _summed, rows, [slot for slot, _ in run], decks.get((s, t))
            )
            starts = dict(run)
            for slot, summary in read.items():
                lo = starts.get(slot, _slot_start(slot))
                kept.put((s, t, lo, counted[slot], decks.get((s, t))), summary)
                parts[(s, t)].append(summary)
    merged: dict[tuple[str, str], Summary] = {}
    for key, found in parts.items():
        total = merged[key] = Summary()
        for part in found:
            total.merge(part)
    return merged
