"""The service's start time and resident memory.

``python -m bench.service`` starts a Mosquitto broker on loopback, then, for
each of ``--starts`` cold starts, a new :class:`~table_controller.rigs.rig.TableRig`
(shoe, console and sensor-board simulators over TCP, a fresh journal) and
``table-controller run`` as a child process (``rig.start_controller_process``:
``python -m table_controller.cli run --config …``). It measures

* the time from ``Popen`` to the retained ``status`` with ``online: true`` at a
  subscriber that was listening before the process started, and to the first
  ``status`` with every device ``ok``;
* the resident memory (``VmRSS`` of ``/proc/<pid>/status``) once online, and
  after the :class:`~table_controller.rigs.dealer.Dealer` has played ``--rounds`` rounds at
  seven positions through the simulators, with the peak (``VmHWM``);
* a restart: ``SIGTERM`` (the service publishes ``online: false`` and exits),
  then ``table-controller run`` again on the same journal, which it replays
  (docs/rules.md: everything is rebuilt from the journal), to ``online: true``.

It prints the figures and writes ``bench/results/service.json``. ``--quick``
is a tiny run for the smoke test. Speed is measured here, never asserted in
tests.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.figures import NODELAY, RESULTS_DIR, BenchError, machine, now_iso, write_results
from bench.latency import HABITS, ONLINE_WAIT_S, POSITIONS
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.dealer import Dealer
from table_controller.rigs.rig import Observer, TableRig, TableSpec
from table_controller.service.journal import Journal

RESULTS = RESULTS_DIR / "service.json"
TARGET_RSS_MB = 60.0
TARGET_ONLINE_S = 1.5
STARTS = 3
ROUNDS = 20
QUICK_STARTS = 1
QUICK_ROUNDS = 2
RUN_TIMEOUT_S = 600.0


def memory_mb(pid: int) -> dict[str, float]:
    """``VmRSS`` (resident now) and ``VmHWM`` (its peak) of a process, in MB (10^6 bytes)."""
    figures: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                kib = int(value.split()[0])
                figures[key] = round(kib * 1024 / 1e6, 1)
    if "VmRSS" not in figures:
        raise BenchError(f"no VmRSS for process {pid}")
    return figures


def _status_count(obs: Observer) -> int:
    return len(obs.of("status"))


async def _online_after(rig: TableRig, seen: int, *, devices: bool) -> None:
    """Until a ``status`` newer than the first ``seen`` says online (every device ok)."""

    def ok(obs: Observer) -> bool:
        for status in obs.of("status")[seen:]:
            if status["online"] and (
                not devices or all(d["state"] == "ok" for d in status["devices"].values())
            ):
                return True
        return False

    await rig.wait(ok, ONLINE_WAIT_S)


async def one_start(
    broker: MosquittoBroker, workdir: Path, rounds: int, seed: int, deadline: float
) -> dict[str, Any]:
    """A cold start, rounds played, a restart on the same journal: the figures."""
    # A table id of its own: nothing retained by an earlier start on this broker is seen.
    spec = TableSpec(table_id=f"war-{uuid.uuid4().hex[:8]}", positions=POSITIONS, seed=seed)
    async with TableRig(broker.url, workdir, spec) as rig:
        assert rig.observer is not None
        seen = _status_count(rig.observer)
        start = time.perf_counter()
        proc = rig.start_controller_process()
        try:
            await _online_after(rig, seen, devices=False)
            online_s = time.perf_counter() - start
            await _online_after(rig, seen, devices=True)
            ready_s = time.perf_counter() - start
            at_online = memory_mb(proc.pid)
            dealer = Dealer(rig, seed=seed, habits=HABITS, speed=50.0)
            await dealer.open_table()
            for _ in range(rounds):
                if time.monotonic() > deadline:
                    raise BenchError(f"out of time after {len(dealer.played)} rounds")
                await dealer.play_round()
            await rig.wait_rounds(rounds)
            after_rounds = memory_mb(proc.pid)
            cards = sum(1 for e in rig.observer.of("events") if e["type"] == "card")
        finally:
            # SIGTERM: the service publishes its final status and closes cleanly.
            rig.kill_controller_process(signal.SIGTERM)
        if proc.returncode != 0:
            raise BenchError(f"table-controller run exited with {proc.returncode}")
        # The last status the first run published marks the end of its messages: a
        # status after it comes from the restart.
        with Journal(rig.journal_path, readonly=True) as journal:
            (last,) = journal.sent_messages("status", 1)
        await rig.wait(lambda o: last.id in o.ids, ONLINE_WAIT_S)
        seen = _status_count(rig.observer)
        start = time.perf_counter()
        rig.start_controller_process()
        try:
            await _online_after(rig, seen, devices=False)
            restart_online_s = time.perf_counter() - start
        finally:
            rig.kill_controller_process(signal.SIGTERM)
    return {
        "online_s": round(online_s, 3),
        "devices_ok_s": round(ready_s, 3),
        "rss_online_mb": at_online["VmRSS"],
        "rss_after_rounds_mb": after_rounds["VmRSS"],
        "rss_peak_mb": after_rounds.get("VmHWM", after_rounds["VmRSS"]),
        "rounds": len(dealer.played),
        "cards": cards,
        "restart_online_s": round(restart_online_s, 3),
    }


async def all_starts(
    broker: MosquittoBroker, starts: int, rounds: int, seed: int, deadline: float
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(starts):
        with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
            out.append(await one_start(broker, Path(tmp), rounds, seed + i, deadline))
        print(f"start {i + 1}: {out[-1]}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.service",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--starts", type=int, default=STARTS, help="cold starts")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds played per start")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, help="bound, seconds")
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    starts = QUICK_STARTS if args.quick else max(1, args.starts)
    rounds = QUICK_ROUNDS if args.quick else max(1, args.rounds)
    deadline = time.monotonic() + args.timeout

    with MosquittoBroker(extra_config=NODELAY) as broker:
        runs = asyncio.run(all_starts(broker, starts, rounds, args.seed, deadline))
    online = [r["online_s"] for r in runs]
    rss = [r["rss_after_rounds_mb"] for r in runs]
    figures = {
        "benchmark": "service",
        "when": now_iso(),
        "machine": machine(),
        "positions": POSITIONS,
        "rounds_per_start": rounds,
        "starts": runs,
        "online_s_median": round(statistics.median(online), 3),
        "online_s_max": max(online),
        "devices_ok_s_max": max(r["devices_ok_s"] for r in runs),
        "restart_online_s_max": max(r["restart_online_s"] for r in runs),
        "rss_after_rounds_mb_max": max(rss),
        "rss_peak_mb_max": max(r["rss_peak_mb"] for r in runs),
        "target_online_s": TARGET_ONLINE_S,
        "target_rss_mb": TARGET_RSS_MB,
        # Judged on the worst start, not the best.
        "meets_online_target": max(online) <= TARGET_ONLINE_S,
        "meets_rss_target": max(rss) <= TARGET_RSS_MB,
    }
    print(
        f"service: online {figures['online_s_median']} s median, {figures['online_s_max']} s "
        f"worst (target {TARGET_ONLINE_S} s); RSS after {rounds} rounds "
        f"{figures['rss_after_rounds_mb_max']} MB worst, peak {figures['rss_peak_mb_max']} MB "
        f"(target {TARGET_RSS_MB} MB); restart on its journal "
        f"{figures['restart_online_s_max']} s worst"
    )
    write_results(args.out, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
