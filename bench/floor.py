"""The floor page's figures over a busy day: how long today's report takes to answer.

``python -m bench.floor --tables T --hours H --out FILE`` starts a PostgreSQL
server of its own, stores T tables' day of rounds (one every ``ROUND_S``
seconds for H hours, a ``dealer_changed`` every ``DEALER_ROUNDS`` rounds, and
``--history-events`` other events a round over ``--history-days`` days before
it) through the recorder's own intake, then times what the floor asks for on
every update: the report of the day so far (``StorePitData.report``), first
(nothing summed yet), then after each of ``--updates`` new rounds, each at
another table, as a busy floor brings them.

In the same run, its floor: the report's own aggregate over the ``rounds``
table (one ``GROUP BY``), which no report can undercut.

Figures: ``rounds_today``, ``report_first_ms``, ``report_next_ms`` (the median
of the updates), ``report_next_max_ms``, ``aggregate_ms`` (the floor's median)
and their ratio ``next_over_aggregate``. Speed is measured here, never
asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from bench.figures import RESULTS_DIR, machine, now_iso, write_results
from bench.pg_server import PostgresServer
from bench.seeder import ROUND_S, Seat, Seeder
from table_controller.recorder.queries import window
from table_controller.recorder.store.backend import Backend, migrate, open_backend
from table_controller.recorder.web.pitdata import StorePitData

SITE: Final = "bench-floor"
DEALER_ROUNDS: Final = 60
BATCH: Final = 500
RESULTS: Final = RESULTS_DIR / "floor.json"
DAY: Final = datetime(2026, 3, 2, tzinfo=UTC)


def _seats(i: int) -> dict[int, Seat]:
    """A round at five positions, varied by ``i``: wins, losses, a war, a surrender."""
    kinds = (
        Seat(1000, "win"),
        Seat(2500, "lose", tie=500),
        Seat(500, "tie", "war", "win"),
        Seat(1000, "tie", "surrender"),
        Seat(2500, "lose"),
    )
    return {p: kinds[(i + p) % len(kinds)] for p in range(1, 6)}


async def _seed_table(db: Backend, table: str, start: datetime, rounds: int) -> Seeder:
    seeder = Seeder(db, site=SITE, table=table, start=start)
    await seeder.status()
    pending: list[dict[str, Any]] = []
    for i in range(rounds):
        if i % DEALER_ROUNDS == 0:
            await seeder.store(*pending)
            pending = []
            await seeder.dealer_changed(f"D-{i // DEALER_ROUNDS % 7 + 1}")
        pending.append(seeder.record(_seats(i)))
        if len(pending) == BATCH:
            await seeder.store(*pending)
            pending = []
    await seeder.store(*pending)
    return seeder


async def _history(db: Backend, tables: Sequence[str], days: int, per_round: int) -> int:
    """Other events of the days before, written by SQL (a week of them takes too long
    through the intake): they are what a scan of every event would have to read."""
    count = days * 86_400 // ROUND_S * per_round
    if count == 0:
        return 0
    first = DAY - timedelta(days=days)
    for table in tables:
        async with db.transaction() as tx:
            await tx.execute(
                "INSERT INTO messages (id, site, table_id, topic, schema, epoch, feed_seq, ts,"
                " received, payload, problem) SELECT ?::text || g, ?, ?, 'events', 'table-event/1',"
                " 'h', g, to_char((?::timestamptz + g * interval '1 second' * ?::int / ?::int)"
                " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), 'x',"
                ' \'{"type": "card"}\', NULL FROM generate_series(1, ?::int) AS g',
                [f"h-{table}-", SITE, table, first, ROUND_S, per_round, count],
            )
    return count * len(tables)


async def _timed(coro: Any) -> float:
    began = time.perf_counter()
    await coro
    return (time.perf_counter() - began) * 1000


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rounds = int(args.hours * 3600 // ROUND_S)
    with PostgresServer() as server:
        db = open_backend(server.create_database())
        await migrate(db)
        try:
            began = time.perf_counter()
            names = [f"war-{i:02d}" for i in range(1, args.tables + 1)]
            seeders = [await _seed_table(db, n, DAY, rounds) for n in names]
            history = await _history(db, names, args.history_days, args.history_events)
            seeded_s = time.perf_counter() - began
            end = DAY + timedelta(hours=args.hours, minutes=30)
            data = StorePitData(db)
            first = await _timed(data.report(site=SITE, start=DAY, end=end))
            nexts = []
            for i in range(args.updates):
                await seeders[i % len(seeders)].round(_seats(i))
                nexts.append(await _timed(data.report(site=SITE, start=DAY, end=end)))
            where, params = window("ended", SITE, DAY, end)
            aggregate = "SELECT site, table_id, COUNT(*), SUM(handle), SUM(net) FROM rounds"
            floors = [
                await _timed(db.fetch(aggregate + where + " GROUP BY site, table_id", params))
                for _ in range(max(3, args.updates))
            ]
        finally:
            await db.close()
    nxt, floor = statistics.median(nexts), statistics.median(floors)
    figures = {
        "bench": "floor",
        "when": now_iso(),
        "machine": machine(),
        "tables": args.tables,
        "hours": args.hours,
        "rounds_today": args.tables * rounds + args.updates,
        "history_events": history,
        "seeded_s": round(seeded_s, 1),
        "report_first_ms": round(first, 1),
        "report_next_ms": round(nxt, 1),
        "report_next_max_ms": round(max(nexts), 1),
        "aggregate_ms": round(floor, 2),
        "next_over_aggregate": round(nxt / floor, 1),
    }
    for key in ("rounds_today", "report_first_ms", "report_next_ms", "aggregate_ms"):
        print(f"{key}: {figures[key]}")
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__)
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--hours", type=float, default=20.0, help="of rounds today, per table")
    parser.add_argument("--history-days", type=int, default=7)
    parser.add_argument("--history-events", type=int, default=12, help="other events a round")
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="a tiny day, to check the bench")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.tables, args.hours, args.history_days, args.updates = 2, 0.5, 1, 3
    write_results(args.out, asyncio.run(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
