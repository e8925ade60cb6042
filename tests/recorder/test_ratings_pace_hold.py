"""Game pace from dealer_changed, and hold against theo's 95 % interval, in both databases."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from fractions import Fraction
from typing import Any

from bench.seeder import ROUND_S, T0, Seat, Seeder
from table_controller.engine.rules import PROFILES, RulesName
from table_controller.feed.payloads import rfc3339
from table_controller.recorder.intake import parse_message
from table_controller.recorder.ratings.hold import HOLD_VARIANCE, z_for
from table_controller.recorder.ratings.pace import pace
from table_controller.recorder.report import report
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import store_batch
from table_controller.recorder.unparsed import kept_unparsed
from table_controller.tools.odds import house_edges

WIN, LOSE, SURRENDER = Seat(1000, "win"), Seat(1000, "lose"), Seat(1000, "tie", "surrender")


async def test_pace_follows_the_dealer_changed_events(db: Backend) -> None:
    seeder = Seeder(db, table="pace")
    plan = [("D-7", 30, 0), ("D-9", 15, 600), ("D-7", 10, 0)]  # dealer, rounds, idle s first
    for dealer, count, idle in plan:
        await seeder.dealer_changed(dealer)
        seeder.at += timedelta(seconds=idle)
        for _ in range(count):
            await seeder.round({1: WIN})
    found = await pace(db, site=seeder.site)
    got = [(d["dealer"], d["rounds"], d["rounds_per_hour"]) for d in found["dealer_sessions"]]
    hours = [(count * ROUND_S + idle) / 3600 for _, count, idle in plan]
    assert got == [
        (dealer, count, round(count / h, 2))
        for (dealer, count, _), h in zip(plan, hours, strict=True)
    ]
    assert got[1][2] == 45.0  # 15 rounds in 20 minutes, half of them idle
    by_dealer = {d["dealer"]: d for d in found["dealers"]}
    assert by_dealer["D-7"]["rounds"] == 40
    assert by_dealer["D-7"]["sessions"] == 2
    assert by_dealer["D-7"]["rounds_per_hour"] == round(40 / (hours[0] + hours[2]), 2)
    assert found["tables"][0]["rounds"] == 55
    # The report names each table's latest dealer session, as the floor tile shows it.
    shift = await report(db, site=seeder.site)
    assert shift["tables"][0]["dealer_pace"]["dealer"] == "D-7"
    assert shift["dealers"] == found["dealers"]
    # A table's pace over the same rounds is the report's: first start to last end.
    assert found["tables"][0]["rounds_per_hour"] == shift["tables"][0]["rounds_per_hour"]
    span_h = sum(count * ROUND_S + idle for _, count, idle in plan) / 3600
    assert found["tables"][0]["rounds_per_hour"] == round(55 / span_h, 2)


async def test_pace_in_a_window_cuts_the_dealer_sessions(db: Backend) -> None:
    seeder = Seeder(db, table="window")
    await seeder.dealer_changed("D-1")
    for _ in range(90):  # one hour
        await seeder.round({1: WIN})
    found = await pace(db, site=seeder.site, start=T0 + timedelta(minutes=30), end=seeder.at)
    assert [(d["dealer"], d["rounds"]) for d in found["dealer_sessions"]] == [("D-1", 45)]
    assert found["dealer_sessions"][0]["rounds_per_hour"] == 90.0


async def test_a_dealer_change_that_counts_for_no_table_changes_no_dealer(db: Backend) -> None:
    """One kept although its envelope did not parse (recorder/unparsed.py: its time could be
    anything), or published on another table's topic (no table's account speaks for
    another), is stored, and names no dealer."""
    seeder = Seeder(db, table="unparsed")
    await seeder.dealer_changed("D-1")
    for _ in range(3):
        await seeder.round({1: WIN})
    topic = f"casino/{seeder.site}/table/{seeder.table}/events"
    body = {"schema": "table-event/1", "epoch": seeder.epoch, "feed_seq": 99, "seq": 9}
    body |= {"type": "dealer_changed", "dealer": "D-2", "round_id": None}
    for ts in ("at half past", rfc3339(seeder.at)):
        payload = json.dumps(body | {"ts": ts}).encode()
        kept = kept_unparsed(topic, payload, "envelope: id: Field required")
        assert kept is not None
        await store_batch(db, [kept], received=rfc3339(seeder.at))
    named = body | {"id": "d-2", "table": seeder.table, "site": seeder.site}
    foreign = named | {"ts": rfc3339(seeder.at)}
    misplaced = parse_message(topic.replace("/unparsed/", "/other/"), json.dumps(foreign).encode())
    assert misplaced.misplaced
    await store_batch(db, [misplaced], received=rfc3339(seeder.at))
    for _ in range(3):
        await seeder.round({1: WIN})
    found = await pace(db, site=seeder.site, start=T0)  # the unreadable time: now
    assert [(d["dealer"], d["rounds"]) for d in found["dealer_sessions"]] == [("D-1", 6)]


async def _run(db: Backend, table: str, seats: list[Seat]) -> dict[str, Any]:
    seeder = Seeder(db, table=table, rules=RulesName.STANDARD)
    await seeder.status()
    for seat in seats:
        await seeder.round({1: seat})
    shift = await report(db, site=seeder.site)
    rows: list[dict[str, Any]] = [r for r in shift["tables"] if r["table"] == table]
    assert len(rows) == 1
    return rows[0]


def _ordinary(n: int) -> list[Seat]:
    """Outcomes in the shoe's own proportions, ties surrendered: a win near theo."""
    e = house_edges(PROFILES[RulesName.STANDARD], 6)
    ties = round(n * e.original.tie)
    wins = round(n * e.original.win)
    return [WIN] * wins + [SURRENDER] * ties + [LOSE] * (n - wins - ties)


async def test_an_ordinary_run_is_not_flagged(db: Backend) -> None:
    row = await _run(db, "ordinary", _ordinary(200))
    assert row["flags"] == []
    interval = row["interval"]
    assert isinstance(interval, dict)
    assert interval["low"] <= row["win"] <= interval["high"]


async def test_a_run_pushed_outside_the_interval_is_flagged(db: Backend) -> None:
    seats = _ordinary(200)
    pushed = [LOSE if s is WIN else s for s in seats[:60]] + seats[60:]  # 60 wins turned
    row = await _run(db, "pushed", pushed)
    assert row["flags"] == [HOLD_VARIANCE]
    interval = row["interval"]
    assert isinstance(interval, dict)
    assert isinstance(row["win"], int)
    assert row["win"] > interval["high"]


async def test_the_interval_is_theo_and_the_odds_tools_variance(db: Backend) -> None:
    seats = _ordinary(100)
    row = await _run(db, "interval", seats)
    e = house_edges(PROFILES[RulesName.STANDARD], 6)
    # Every tie surrendered: the policy is always surrendering, p = 0.
    theo = sum((s.initial * e.edge_surrender for s in seats), Fraction(0))
    var = e.variance("edge_surrender")
    assert var is not None
    sd = math.sqrt(sum((s.initial**2 * var for s in seats), Fraction(0)))
    assert row["theo"] == round(theo)
    assert row["interval"] == {
        "level": 0.95,
        "low": math.floor(float(theo) - z_for() * sd),
        "high": math.ceil(float(theo) + z_for() * sd),
    }
