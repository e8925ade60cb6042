"""The journal over a year on the floor: write cost, restart time and file size stay flat.

``python -m bench.journal --rounds N [--keep-days D] --out FILE`` plays N rounds
at seven positions through the service's write path: the real
:class:`~table_controller.service.runner.TableRunner` and
:class:`~table_controller.service.journal.Journal` on this disk, the retained
views flushed after every input as the service's views task does, every message
marked sent once "published" (as the publisher does after its PUBACK), a
recorder's ``ack`` of everything sent and the service's prune every
``PRUNE_EVERY`` inputs (about a minute of a live table). The table's clock
steps a simulated ``STEP_S`` per input, so N rounds span the days they would on
the floor and ``--keep-days`` means what it says. Then the table is closed and
opened again, as a restart does.

It writes JSON with ``write_ms_per_round`` (wall time per round over the last
10 % of the rounds), ``restart_s`` (opening the journal and rebuilding the table),
``file_bytes`` (the file and its WAL before the restart) and
``inputs_replayed_at_restart``. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from bench.feeder import Feeder, SteppedClock
from bench.figures import RESULTS_DIR, filesystem_of, machine, now_iso, write_results
from table_controller.service.config import TableConfig, parse_config
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner

RESULTS: Final = RESULTS_DIR / "journal.json"
PRUNE_EVERY: Final = 50
STEP_S: Final = 1.7
"""Simulated seconds per input: about 2,000 rounds a day at some 25 inputs a round."""
START: Final = datetime(2026, 1, 1, tzinfo=UTC)


def _config(path: Path, keep_days: float) -> TableConfig:
    return parse_config(
        {
            "table": {"id": "war-bench", "site": "bench", "rules": "ny", "decks": 6},
            "devices": {"shoe": "socket://127.0.0.1:9", "console": "socket://127.0.0.1:9"},
            "storage": {"path": str(path), "keep_days": keep_days},
        }
    )


def _sizes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def play(path: Path, rounds: int, keep_days: float) -> dict[str, Any]:
    cfg = _config(path, keep_days)
    clock = SteppedClock(START, timedelta(seconds=STEP_S))
    journal = Journal(path)
    runner = TableRunner(cfg, journal, clock=clock)
    feeder = Feeder("bench", lambda: runner.engine.state, seed=11, clock=clock)
    tail_from = rounds - max(1, rounds // 10)
    tail_start = 0.0
    inputs = 0
    started = time.perf_counter()
    for inp in feeder.play(rounds):
        if feeder.rounds == tail_from and not tail_start:
            tail_start = time.perf_counter()
        runner.handle(inp)
        runner.flush_views()
        while not runner.console_out.empty():
            runner.console_out.get_nowait()
        while not runner.lights_out.empty():
            runner.lights_out.get_nowait()
        journal.mark_sent([m.id for m in journal.pending(1000)])
        inputs += 1
        if inputs % PRUNE_EVERY == 0:
            # A recorder committed everything sent; the service's prune task runs.
            journal.record_ack("bench-recorder", runner.messages.feed_seq, now=clock.now)
            journal.prune(keep_days=keep_days, mode=cfg.storage.prune, now=clock.now)
    elapsed = time.perf_counter() - started
    tail_ms = (time.perf_counter() - tail_start) * 1000 / (rounds - tail_from)
    file_bytes = _sizes(path)
    journal.close()

    restart_started = time.perf_counter()
    journal = Journal(path)
    again = TableRunner(cfg, journal)
    restart_s = time.perf_counter() - restart_started
    replayed = again.replayed
    assert again.engine.state.stats.rounds == runner.engine.state.stats.rounds
    journal.close()
    return {
        "benchmark": "journal",
        "rounds": rounds,
        "keep_days": keep_days,
        "inputs": inputs,
        "simulated_days": round(inputs * STEP_S / 86400, 1),
        "play_s": round(elapsed, 1),
        "write_ms_per_round": round(tail_ms, 3),
        "restart_s": round(restart_s, 4),
        "file_bytes": file_bytes,
        "inputs_replayed_at_restart": replayed,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.journal", description=__doc__)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument(
        "--keep-days", type=float, default=0.0, help="[storage] keep_days (0: the floor)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the journal goes (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-journal-", dir=args.dir))
    try:
        figures = play(workdir / "war-bench.sqlite3", args.rounds, args.keep_days)
        figures.update(
            {"when": now_iso(), "filesystem": filesystem_of(workdir), "machine": machine()}
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps({k: v for k, v in figures.items() if k != "machine"}, indent=2))
    write_results(args.out, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
