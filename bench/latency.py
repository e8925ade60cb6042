"""End-to-end latency: a shoe's CARD frame to its ``card`` event at an MQTT 5 subscriber.

``python -m bench.latency --cards N`` starts a Mosquitto broker on loopback
(``set_tcp_nodelay true``, as every broker the project ships or starts) and a
:class:`~table_controller.rigs.rig.TableRig` (shoe, console and sensor-board
simulators over TCP) with ``table-controller run`` as a child process. The
project's :class:`~table_controller.rigs.dealer.Dealer` plays rounds at seven
positions, every seat taken, no misreads or past-posts (they would wait for
the dealer), through the simulators as a dealer would.

For every card read the clock starts just before the shoe simulator passes
the card through its reader (``ShoeSimulator.draw()`` hands the ``$CARD``
frame to its TCP transport) and stops when an MQTT 5 subscriber in this process
(paho on its own thread, as the floor's subscriber) receives that card's
``events`` message: both ends on one clock (``time.perf_counter_ns``). A round's
``round_settled`` event is timed from the input that settled it: its last card,
or the last press (when every tied player surrendered). In between lie the
controller's device driver, the engine, the one journal commit (SQLite, WAL,
``synchronous=FULL``), the publisher, the broker and the subscriber's client.

Two runs: **idle** (a card every ``IDLE_CARD_S``, one in flight at a time) and
**load** (a card every ``LOAD_CARD_S``, 50 ms). Beside them, on the same
machine in the same run: the bare paho floor through the same broker and one
journal commit on the same disk (``bench/figures.py``), each at the idle run's
pace (``floor_*`` and ``commit_*``: an idle machine's fsync and round trip are
slower than back to back) and back to back (``back_to_back``), and the
controller's CPU per round (``/proc/<pid>/stat`` user + system over the run,
divided by the rounds). Its floors: ``work_cpu`` (``bench/work_cpu.py``), the
inputs the controller journaled in the run, fed again in this process to a table
runner on a journal of its own (engine, messages, commit, views; nothing
published), at the run's pace and back to back; and its wakes: how often its
threads blocked and woke in a round (``wakes_per_round``, from each thread's
``/proc/<pid>/task/<tid>/status``; ``preemptions_per_round`` beside it), times
what one bare wake costs this machine at the idle run's pace (``wake_cpu_us``,
``bench/figures.py``): ``wake_floor_ms_per_round``, the CPU those wakes cost
before anything is done on them.

It prints the figures and writes ``bench/results/latency.json`` with
``p50_ms``, ``p99_ms``, ``max_ms``, ``floor_p50_ms``, ``floor_p99_ms``,
``commit_p50_ms``, ``commit_p99_ms``, ``cpu_ms_per_round``,
``work_cpu_ms_per_round``, ``wake_cpu_us`` and ``wake_floor_ms_per_round``
(idle) and the same under ``load`` with ``round_settled_p99_ms``. ``--quick`` is
a tiny run for the smoke test. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.figures import (
    NODELAY,
    RESULTS_DIR,
    BenchError,
    PahoClient,
    filesystem_of,
    journal_commit_ms,
    machine,
    now_iso,
    paho_floor,
    percentile,
    summarize,
    wake_cpu_us,
    write_results,
)
from bench.work_cpu import work_cpu
from simulators.shoe import SimulatedRead
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.dealer import Dealer
from table_controller.rigs.people import Habits, Pace
from table_controller.rigs.rig import TableRig, TableSpec

RESULTS: Final = RESULTS_DIR / "latency.json"
POSITIONS: Final = 7
CARDS: Final = 1000
QUICK_CARDS: Final = 20
IDLE_CARD_S: Final = 0.25
LOAD_CARD_S: Final = 0.05
"""Issue 12, under load: a card every 50 ms."""
TARGET_P99_MS: Final = 2.0
TARGET_CPU_MS_PER_ROUND: Final = 2.0
ONLINE_WAIT_S: Final = 30.0
RUN_TIMEOUT_S: Final = 1800.0
FLOOR_SAMPLES: Final = 200
"""Samples of each floor (a minute at the idle pace, with the journal commit)."""
HABITS: Final = Habits(seat_taken=1.0, misread=0.0, past_post=0.0)

__all__ = ["POSITIONS", "RESULTS_DIR", "BenchError", "machine", "now_iso", "write_results"]


class Timing:
    """Draw times by read number, and each card's and round's event latency."""

    def __init__(self) -> None:
        self.draws: dict[int, int] = {}
        self.last_input = 0
        """When the dealer last drew a card or pressed a button."""
        self.card_ms: list[float] = []
        self.settled_ms: list[float] = []
        self.payload: bytes | None = None

    def instrument(self, rig: TableRig) -> None:
        """Note the time just before each card goes through the shoe's reader, and just
        before each press of a console button."""
        draw, press = rig.shoe.draw, rig.console.press

        def timed_draw(*args: Any, **kwargs: Any) -> SimulatedRead:
            start = self.last_input = time.perf_counter_ns()
            read = draw(*args, **kwargs)
            self.draws[read.n] = start
            return read

        def timed_press(*args: Any, **kwargs: Any) -> int:
            self.last_input = time.perf_counter_ns()
            return press(*args, **kwargs)

        rig.shoe.draw = timed_draw  # type: ignore[method-assign]
        rig.console.press = timed_press  # type: ignore[method-assign]

    def take(self, arrived: int, payload: bytes) -> None:
        body = json.loads(payload)
        kind = body.get("type")
        if kind == "card":
            n = body["n"]
            self.payload = self.payload or payload
            self.card_ms.append((arrived - self.draws[n]) / 1e6)
        elif kind == "round_settled" and self.last_input:
            # From the input that settled it: the last card, or a press (all the tied
            # players surrendered, say), not the dealer's pause before that press.
            self.settled_ms.append((arrived - self.last_input) / 1e6)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields 14 and 15 of stat(5), counted after the command name's closing parenthesis.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def switches(pid: int) -> dict[str, tuple[int, int]]:
    """Each of process ``pid``'s threads, by id: its voluntary and involuntary context
    switches so far (``/proc/<pid>/task/<tid>/status``). A voluntary switch is a
    thread blocking: each is followed by a wake."""
    counts: dict[str, tuple[int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text(encoding="ascii")
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        counts[task.name] = (
            int(fields["voluntary_ctxt_switches"]),
            int(fields["nonvoluntary_ctxt_switches"]),
        )
    return counts


def switched(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> tuple[int, int]:
    """Voluntary and involuntary switches between two :func:`switches` of one process,
    summed over its threads (one that ended in between is not counted)."""
    voluntary = involuntary = 0
    for tid, (v, n) in after.items():
        v0, n0 = before.get(tid, (0, 0))
        voluntary += v - v0
        involuntary += n - n0
    return voluntary, involuntary


async def run(
    broker: MosquittoBroker, folder: Path, cards: int, card_s: float, seed: int
) -> dict[str, Any]:
    """Rounds until ``cards`` cards were timed, a card every ``card_s``; the figures."""
    timing = Timing()
    with tempfile.TemporaryDirectory(prefix="bench-latency-", dir=folder) as tmp:
        # A table id of its own: nothing retained by an earlier run on this broker is seen.
        spec = TableSpec(table_id=f"war-{uuid.uuid4().hex[:8]}", positions=POSITIONS, seed=seed)
        # The floor's subscriber: paho on a thread of its own, so that a receipt is
        # timed as the floor's are, not once this process's event loop comes to it.
        with PahoClient(broker, "latency-sub", timing.take) as listener:
            async with TableRig(broker.url, Path(tmp), spec) as rig:
                timing.instrument(rig)
                listener.subscribe(f"{rig.prefix}/events")
                proc = rig.start_controller_process()
                pace = Pace(
                    bet_s=0.01, card_s=card_s, decision_s=0.05, notice_s=0.05, between_rounds_s=0.1
                )
                dealer = Dealer(rig, seed=seed, habits=HABITS, pace=pace, timeout_s=ONLINE_WAIT_S)
                try:
                    await dealer.open_table()
                    cpu_start, rounds_start = cpu_s(proc.pid), len(dealer.played)
                    switches_start = switches(proc.pid)
                    async with asyncio.timeout(RUN_TIMEOUT_S):
                        while len(timing.card_ms) < cards:
                            await dealer.play_round()
                    cpu = cpu_s(proc.pid) - cpu_start
                    woke, preempted = switched(switches_start, switches(proc.pid))
                    rounds = len(dealer.played) - rounds_start
                finally:
                    # SIGTERM: the controller publishes its final status and closes cleanly.
                    rig.kill_controller_process(signal.SIGTERM)
        # The same inputs' work alone, once the controller has let go of its journal.
        work = work_cpu(rig.config_path, rig.journal_path, folder)
    if not timing.card_ms or timing.payload is None:
        raise BenchError("no card event was seen")
    settled = sorted(timing.settled_ms)
    return {
        "card_every_s": card_s,
        **summarize(timing.card_ms),
        "round_settled_p50_ms": round(percentile(settled, 50), 3),
        "round_settled_p99_ms": round(percentile(settled, 99), 3),
        "rounds": rounds,
        "cpu_ms_per_round": round(cpu * 1000 / max(1, rounds), 3),
        "wakes_per_round": round(woke / max(1, rounds), 1),
        "preemptions_per_round": round(preempted / max(1, rounds), 1),
        "work_cpu": work,
        "payload": timing.payload.decode(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__)
    parser.add_argument("--cards", type=int, default=CARDS)
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument("--seed", type=int, default=7, help="the shoe's and the dealer's")
    parser.add_argument("--journal-dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    cards = QUICK_CARDS if args.quick else args.cards
    samples = 10 if args.quick else FLOOR_SAMPLES
    with MosquittoBroker(extra_config=NODELAY) as broker:
        idle = asyncio.run(run(broker, args.journal_dir, cards, IDLE_CARD_S, args.seed))
        load = asyncio.run(run(broker, args.journal_dir, cards, LOAD_CARD_S, args.seed))
        payload = idle.pop("payload").encode()
        load.pop("payload")
        # The floors at the idle run's pace (what a card there cannot beat: an idle
        # machine and disk wake up slower), and back to back for comparison.
        floor = summarize(paho_floor(broker, payload, samples, IDLE_CARD_S))
        floor_burst = summarize(paho_floor(broker, payload, samples))
    commit = journal_commit_ms(args.journal_dir, samples, IDLE_CARD_S)
    wake_us = wake_cpu_us(samples, IDLE_CARD_S)
    commit_burst = journal_commit_ms(args.journal_dir, samples)
    figures: dict[str, Any] = {
        "benchmark": "latency",
        "when": now_iso(),
        "cards": cards,
        "positions": POSITIONS,
        "journal_dir": str(args.journal_dir),
        "filesystem": filesystem_of(args.journal_dir),
        "p50_ms": idle["p50_ms"],
        "p99_ms": idle["p99_ms"],
        "max_ms": idle["max_ms"],
        "floor_p50_ms": floor["p50_ms"],
        "floor_p99_ms": floor["p99_ms"],
        "commit_p50_ms": commit["p50_ms"],
        "commit_p99_ms": commit["p99_ms"],
        "cpu_ms_per_round": idle["cpu_ms_per_round"],
        # The CPU's floor: the same inputs' work alone, in one thread, at the run's pace.
        "work_cpu_ms_per_round": idle["work_cpu"]["paced"]["ms_per_round"],
        # What the controller's wakes alone cost here, with nothing done on them.
        "wake_cpu_us": wake_us,
        "wake_floor_ms_per_round": round(idle["wakes_per_round"] * wake_us / 1000, 3),
        "floors_every_s": IDLE_CARD_S,
        "back_to_back": {
            "floor_p50_ms": floor_burst["p50_ms"],
            "floor_p99_ms": floor_burst["p99_ms"],
            "commit_p50_ms": commit_burst["p50_ms"],
            "commit_p99_ms": commit_burst["p99_ms"],
        },
        "idle": idle,
        "load": load,
        "machine": machine(),
    }
    figures["meets"] = {
        "p99_ms": figures["p99_ms"] <= TARGET_P99_MS,
        "p50_ms": figures["p50_ms"] <= 2 * floor["p50_ms"] + commit["p50_ms"],
        "cpu_ms_per_round": figures["cpu_ms_per_round"] <= TARGET_CPU_MS_PER_ROUND,
    }
    for name, fig in (("idle", idle), ("load", load)):
        print(
            f"latency {name} (a card every {fig['card_every_s']} s): {fig['count']} cards, "
            f"p50 {fig['p50_ms']} ms, p99 {fig['p99_ms']} ms, max {fig['max_ms']} ms; "
            f"round_settled p99 {fig['round_settled_p99_ms']} ms; "
            f"CPU {fig['cpu_ms_per_round']} ms/round over {fig['rounds']} rounds"
        )
        work = fig["work_cpu"]
        print(
            f"  the same inputs' work alone: {work['paced']['ms_per_round']} ms/round at the "
            f"run's pace ({work['paced']['rounds']} rounds), "
            f"{work['back_to_back']['ms_per_round']} ms/round back to back "
            f"({work['back_to_back']['us_per_input']} µs an input)"
        )
        print(
            f"  its threads woke {fig['wakes_per_round']} times a round "
            f"(and were preempted {fig['preemptions_per_round']} times)"
        )
    print(
        f"floor, one every {IDLE_CARD_S} s: paho p50 {floor['p50_ms']} ms, p99 "
        f"{floor['p99_ms']} ms; one journal commit on {figures['filesystem']}: p50 "
        f"{commit['p50_ms']} ms, p99 {commit['p99_ms']} ms; load average "
        f"{figures['machine']['loadavg']}"
    )
    print(
        f"floor, one wake every {IDLE_CARD_S} s with nothing done on it: {wake_us} µs of CPU; "
        f"the idle run's wakes alone: {figures['wake_floor_ms_per_round']} ms/round"
    )
    print(
        f"floor, back to back: paho p50 {floor_burst['p50_ms']} ms, p99 "
        f"{floor_burst['p99_ms']} ms; commit p50 {commit_burst['p50_ms']} ms, p99 "
        f"{commit_burst['p99_ms']} ms"
    )
    write_results(args.out, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
