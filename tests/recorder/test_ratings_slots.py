"""Hold and pace summed once per ten-minute slot: always the figures of reading every round."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any

import pytest

from bench.seeder import T0, Seat, Seeder
from table_controller.recorder.ratings import buckets
from table_controller.recorder.report import report
from table_controller.recorder.store.backend import Backend, Row, Tx, open_backend

SEATS = (
    Seat(1000, "win"),
    Seat(2500, "lose", tie=500),
    Seat(500, "tie", "war", "win"),
    Seat(1000, "tie", "surrender"),
)


def _seats(i: int) -> dict[int, Seat]:
    return {p: SEATS[(i + p) % len(SEATS)] for p in range(1, 4)}


async def _as_read_afresh(db_url: str, window: dict[str, Any]) -> dict[str, Any]:
    """The report from a backend that has summed nothing yet: it reads every round."""
    fresh = open_backend(db_url)
    try:
        return await report(fresh, **window)
    finally:
        await fresh.close()


async def test_the_slots_kept_give_what_reading_every_round_gives(db: Backend, db_url: str) -> None:
    seeder = Seeder(db, table="slots")
    await seeder.status()
    await seeder.dealer_changed("D-1")
    for i in range(60):  # 40 minutes: four whole slots and a part
        await seeder.round(_seats(i))
    site = seeder.site
    windows: list[dict[str, Any]] = [
        {"site": site},
        {"site": site, "start": T0 + timedelta(minutes=7), "end": seeder.at - timedelta(minutes=3)},
        {"site": site, "start": T0, "end": seeder.at + timedelta(hours=1)},
    ]

    async def same_as_afresh() -> None:
        for window in windows:
            assert await report(db, **window) == await _as_read_afresh(db_url, window), window

    await same_as_afresh()
    # New rounds in the last slot, another dealer.
    await seeder.dealer_changed("D-2")
    for i in range(5):
        await seeder.round(_seats(i))
    await same_as_afresh()
    # A late round (a replay brings it) into a slot summed long ago.
    now = seeder.at
    seeder.at = T0 + timedelta(minutes=12, seconds=5)
    await seeder.round({1: Seat(5000, "lose"), 2: Seat(500, "tie", "surrender")})
    seeder.at = now
    await same_as_afresh()
    # The table's decks change: every slot is priced again.
    seeder.decks = 8
    await seeder.status()
    await same_as_afresh()
    assert (await report(db, **windows[2]))["tables"][0]["rounds"] == 66


class _Reading:
    """A backend that counts the rounds read to be summed (it hands every call on to the
    real one)."""

    def __init__(self, url: str) -> None:
        self.inner = open_backend(url)
        self.url = url
        self.rounds_read = 0

    async def open(self) -> None:
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    def transaction(self, *, exclusive: bool = False) -> AbstractAsyncContextManager[Tx]:
        return self.inner.transaction(exclusive=exclusive)

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        rows = await self.inner.fetch(sql, params)
        if sql == buckets._READ:
            self.rounds_read += len(rows)
        return rows


async def _seeded(db: Backend, rounds: int) -> str:
    seeder = Seeder(db, table="flight")
    await seeder.status()
    await seeder.dealer_changed("D-1")
    for i in range(rounds):
        await seeder.round(_seats(i))
    return seeder.site


async def test_floor_pages_that_ask_at_once_read_the_day_once(db: Backend, db_url: str) -> None:
    site = await _seeded(db, 45)  # four slots
    alone, together = _Reading(db_url), _Reading(db_url)
    try:
        expected = await report(alone, site=site)
        assert alone.rounds_read == 45
        found = await asyncio.gather(*(report(together, site=site) for _ in range(3)))
    finally:
        await alone.close()
        await together.close()
    assert found == [expected] * 3
    assert together.rounds_read == alone.rounds_read  # once, not once a page


async def test_the_rounds_are_parsed_off_the_event_loop(
    db: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = await _seeded(db, 12)
    threads: set[int] = set()
    add = buckets.Summary.add

    def seen(summary: buckets.Summary, record: dict[str, Any], decks: int | None) -> None:
        threads.add(threading.get_ident())
        add(summary, record, decks)

    monkeypatch.setattr(buckets.Summary, "add", seen)
    found = await report(db, site=site)
    assert found["tables"][0]["rounds"] == 12
    assert threads  # some were parsed, and none on the loop's thread
    assert threading.get_ident() not in threads


async def test_a_late_round_and_a_window_cut_earlier_in_its_slot_are_not_taken_for_another(
    db: Backend, db_url: str
) -> None:
    seeder = Seeder(db, table="late-cut")
    await seeder.status()
    await seeder.dealer_changed("D-1")

    async def ending_at(minute: int, seats: dict[int, Seat]) -> None:
        seeder.at = T0 + timedelta(minutes=minute) - timedelta(seconds=40)
        await seeder.round(seats)

    for i, minute in enumerate((1, 3, 5)):
        await ending_at(minute, _seats(i))
    start = T0 - timedelta(hours=1)
    summed = await report(db, site=seeder.site, start=start, end=T0 + timedelta(minutes=6))
    assert summed["tables"][0]["rounds"] == 3
    # A replay brings a round ended at minute 2: the window to minute 4 holds three rounds
    # again, not the three summed before.
    await ending_at(2, {1: Seat(90000, "lose"), 2: Seat(500, "tie", "surrender")})
    window: dict[str, Any] = {"site": seeder.site, "start": start, "end": T0 + timedelta(minutes=4)}
    cut = await report(db, **window)
    assert cut["tables"][0]["rounds"] == 3
    assert cut == await _as_read_afresh(db_url, window)
