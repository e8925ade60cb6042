"""The recorder under load: many tables on one broker, one recorder, nothing lost.

``python -m bench.recorder --tables T --rounds R --database sqlite|postgresql --out FILE``
starts a Mosquitto on loopback, a database (an SQLite file, or a PostgreSQL
server of its own in a temp folder), one ``table-controller recorder``
process, and T light tables (``bench/light_table.py``: table-conformant feed
messages with ``epoch`` and ``feed_seq``, holding each until acknowledged,
answering replays) in ``--workers`` child processes. Each table deals R
rounds at ``--speed`` times a live table's pace (one round every
``LIVE_ROUND_S`` seconds, jittered), then waits until its ``ack`` covers its
last ``feed_seq``.

Figures (from the database, once every table is acknowledged):

* ``published``: messages the tables numbered (the sum of their last ``feed_seq``);
* ``stored``: rows stored for them; ``duplicates``: rows beyond one per
  (table, epoch, ``feed_seq``); ``lost``: numbered messages with no row;
* ``rounds_per_s_stored``: round records stored per second, from the first
  round's ``ts`` to the last commit;
* ``commit_p99_ms``: 99th percentile, over every stored message, of the time
  from its ``ts`` to the commit that stored it (the commit's start, as the
  recorder writes it in ``received``).

Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from bench.figures import RESULTS_DIR, machine, now_iso, percentile, write_results
from bench.light_table import LightTable
from bench.pg_server import PostgresServer
from table_controller.recorder.store.backend import open_backend
from table_controller.rigs.broker import MosquittoBroker

ROOT: Final = Path(__file__).resolve().parent.parent
SITE: Final = "bench"
LIVE_ROUND_S: Final = 40.0  # a live Casino War table: about 90 rounds an hour
ACK_TIMEOUT_S: Final = 600.0
RESULTS: Final = RESULTS_DIR / "recorder.json"


# -- the tables, in a worker process ---------------------------------------------------


async def _worker(spec: dict[str, Any]) -> list[dict[str, Any]]:
    tables = [
        LightTable(spec["host"], spec["port"], site=SITE, table=name, seed=i)
        for i, name in enumerate(spec["tables"])
    ]
    interval = LIVE_ROUND_S / spec["speed"]
    rng = random.Random(spec["seed"])

    async def deal(table: LightTable) -> None:
        await asyncio.sleep(rng.random() * interval)  # tables do not deal in step
        for _ in range(spec["rounds"]):
            table.deal_round()
            await asyncio.sleep(interval * (0.8 + 0.4 * rng.random()))
        await table.wait_acked(ACK_TIMEOUT_S)

    runs = [asyncio.create_task(t.run(), name=f"table-{t.table}") for t in tables]
    try:
        await asyncio.gather(*(deal(t) for t in tables))
    finally:
        for task in runs:
            task.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
    return [
        {"table": t.table, "epoch": t.epoch, "last_feed_seq": t.last_feed_seq, "rounds": t.round_id}
        | {"replays": len(t.replays)}
        for t in tables
    ]


def _start_workers(
    broker: MosquittoBroker, tables: list[str], args: argparse.Namespace
) -> list[subprocess.Popen[str]]:
    shares = [tables[i :: args.workers] for i in range(args.workers)]
    procs = []
    for i, share in enumerate(s for s in shares if s):
        spec = {
            "host": broker.host,
            "port": broker.port,
            "tables": share,
            "rounds": args.rounds,
            "speed": args.speed,
            "seed": i,
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "bench.recorder", "--worker", json.dumps(spec)],
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                cwd=ROOT,
            )
        )
    return procs


# -- the figures ------------------------------------------------------------------------


async def _figures(db_url: str, tables: list[dict[str, Any]]) -> dict[str, Any]:
    db = open_backend(db_url)
    try:
        rows = await db.fetch(
            "SELECT table_id, epoch, feed_seq, ts, received, topic FROM messages WHERE site = ?",
            (SITE,),
        )
    finally:
        await db.close()
    published = sum(t["last_feed_seq"] for t in tables)
    wanted = {(t["table"], t["epoch"]): t["last_feed_seq"] for t in tables}
    distinct = {
        (table, epoch, seq)
        for table, epoch, seq, *_ in rows
        if seq is not None and 1 <= seq <= wanted.get((table, epoch), 0)
    }
    lags = sorted(
        (datetime.fromisoformat(received) - datetime.fromisoformat(ts)).total_seconds() * 1000
        for _, _, _, ts, received, _ in rows
    )
    round_ts = [datetime.fromisoformat(ts) for _, _, _, ts, _, topic in rows if topic == "rounds"]
    last_commit = max((datetime.fromisoformat(r[4]) for r in rows), default=None)
    span = (last_commit - min(round_ts)).total_seconds() if round_ts and last_commit else 0.0
    return {
        "published": published,
        "stored": len(rows),
        "duplicates": len(rows) - len(distinct),
        "lost": published - len(distinct),
        "rounds_stored": len(round_ts),
        "rounds_per_s_stored": round(len(round_ts) / span, 1) if span > 0 else None,
        "commit_p50_ms": round(percentile(lags, 50), 1) if lags else None,
        "commit_p99_ms": round(percentile(lags, 99), 1) if lags else None,
        "replays_asked": sum(t["replays"] for t in tables),
    }


def _database(kind: str, workdir: Path) -> tuple[str, PostgresServer | None]:
    if kind == "sqlite":
        return f"sqlite://{workdir}/recorder.db", None
    server = PostgresServer()
    server.start()
    return server.create_database(), server


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-recorder-") as tmp, MosquittoBroker() as broker:
        workdir = Path(tmp)
        db_url, server = _database(args.database, workdir)
        try:
            config = workdir / "recorder.toml"
            config.write_text(
                f'[mqtt]\nurl = "{broker.url}"\nclient_id = "bench-recorder"\n'
                f'sites = ["{SITE}"]\n[database]\nurl = "{db_url}"\n[http]\nlisten = "127.0.0.1:0"'
                "\n",
                encoding="utf-8",
            )
            log = (workdir / "recorder.log").open("w")
            command = [sys.executable, "-m", "table_controller.cli", "recorder"]
            recorder = subprocess.Popen(
                [*command, "--config", str(config), "--log-level", "WARNING"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
            started = time.monotonic()
            try:
                names = [f"t{i:03d}" for i in range(args.tables)]
                workers = _start_workers(broker, names, args)
                tables: list[dict[str, Any]] = []
                for proc in workers:
                    out, _ = proc.communicate(timeout=ACK_TIMEOUT_S + 60)
                    if proc.returncode != 0:
                        raise RuntimeError(f"a table worker failed ({proc.returncode})")
                    tables += json.loads(out)
                elapsed = time.monotonic() - started
            finally:
                recorder.terminate()
                recorder.wait(timeout=60)
                log.close()
            figures = asyncio.run(_figures(db_url, tables))
        finally:
            if server is not None:
                server.close()
    return {
        "benchmark": "recorder",
        "when": now_iso(),
        "machine": machine(),
        "tables": args.tables,
        "rounds_per_table": args.rounds,
        "speed": args.speed,
        "database": args.database,
        "workers": args.workers,
        "wall_s": round(elapsed, 1),
        **figures,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.recorder", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10, help="rounds per table")
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="postgresql")
    parser.add_argument("--speed", type=float, default=20.0, help="times a live table's pace")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(asyncio.run(_worker(json.loads(args.worker)))))
        return 0
    result = run(args)
    for key in ("published", "stored", "duplicates", "lost", "rounds_per_s_stored"):
        print(f"{key:>22}: {result[key]}")
    print(f"{'commit_p99_ms':>22}: {result['commit_p99_ms']}")
    write_results(args.out, result)
    return 0 if result["lost"] == 0 and result["stored"] == result["published"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
