"""Engine benchmark: rounds per second of the pure engine at seven positions.

``python -m bench.engine`` first plays a seeded session through the engine to
write its input journal (random wagers with chip values on up to seven
positions and on the tie spots, ``NO_MORE_BETS``, card reads, a war or a
surrender on each tie, a reshuffle at the cover card), then times only the
replay of that journal through ``RoundEngine.feed``: no I/O, no input building.
It prints the figures and writes ``bench/results/engine.json``. It times the engine
``run`` uses: compiled when ``make engine`` built it (``engine`` in the JSON says
which); ``TABLE_CONTROLLER_ENGINE=interpreted`` times the ``.py`` modules instead.
``--profile`` prints where the time goes (in the interpreted modules only, when
compiled). Speed is measured here, never
asserted in tests.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from table_controller.engine import (
    Input,
    RoundEngine,
    Session,
    TableSetup,
    native,
    spot_bit,
)
from table_controller.engine.rules import PROFILES, RulesName

RESULTS = Path(__file__).resolve().parent / "results" / "engine.json"
TARGET_ROUNDS_PER_S = 20_000
POSITIONS = 7
STEP = timedelta(milliseconds=250)


def journal(setup: TableSetup, rounds: int, seed: int) -> list[Input]:
    """A seeded session of ``rounds`` settled rounds, as the inputs a table would journal."""
    session = Session(setup, seed=seed, step=STEP, penetration=0.75, keep=True)
    rng = session.rng

    def decide(s: Session, tied: list[int]) -> None:
        war = [p for p in tied if rng.random() < 0.7]
        chips = dict(s.chips)
        for p in war:
            chips[spot_bit(p, 2)] = chips.get(spot_bit(p, 0)) or 500
        s.lay(chips)
        for p in tied:
            s.press("WAR" if p in war else "SURRENDER", str(p))

    settled = 0
    while settled < rounds:
        chips: dict[int, int | None] = {}
        for p in range(1, setup.positions + 1):
            if rng.random() < 0.85:
                chips[spot_bit(p, 0)] = rng.choice((500, 1000, 2500, 10000))
                if rng.random() < 0.3:
                    chips[spot_bit(p, 1)] = rng.choice((100, 500))
        if not chips:
            chips[spot_bit(1, 0)] = 500
        record = session.play_round(chips, decide)
        settled += record is not None and not record.void
    return session.inputs


def replay_time(setup: TableSetup, inputs: Sequence[Input]) -> tuple[float, float, int, int]:
    """Wall and CPU seconds to run ``inputs`` through the engine; rounds, events."""
    engine = RoundEngine(setup)
    feed = engine.feed
    start = time.perf_counter()
    cpu_start = time.process_time()
    for inp in inputs:
        feed(inp)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    # Counted from the engine once the clock stops: only the engine is timed. Every event
    # has the next seq; every round ends settled or void.
    end = engine.snapshot()
    return wall, cpu, end.stats.rounds + end.stats.voids, end.seq


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine", description=__doc__)
    parser.add_argument("--rules", default="ny", choices=[r.value for r in RulesName])
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    setup = TableSetup(PROFILES[RulesName(args.rules)], 6, POSITIONS)
    inputs = journal(setup, args.rounds, args.seed)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        replay_time(setup, inputs)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    # The best of a few runs, by CPU time: one core's rate, whatever else runs beside.
    best = best_wall = float("inf")
    rounds = events = 0
    for _ in range(max(1, args.repeat)):
        wall, cpu, rounds, events = replay_time(setup, inputs)
        best = min(best, cpu)
        best_wall = min(best_wall, wall)
    rounds_per_s = rounds / best
    figures = {
        "rules": args.rules,
        "decks": setup.decks,
        "positions": POSITIONS,
        "seed": args.seed,
        "rounds": rounds,
        "inputs": len(inputs),
        "events": events,
        "cpu_seconds": round(best, 4),
        "wall_seconds": round(best_wall, 4),
        "wall_rounds_per_s": round(rounds / best_wall),
        "rounds_per_s": round(rounds_per_s),
        "inputs_per_s": round(len(inputs) / best),
        "events_per_s": round(events / best),
        "us_per_round": round(best / rounds * 1e6, 1),
        "target_rounds_per_s": TARGET_ROUNDS_PER_S,
        "meets_target": rounds_per_s >= TARGET_ROUNDS_PER_S,
        # "compiled" (make engine) or "interpreted" (table_controller/engine/native.py).
        "engine": native.mode(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
    }
    print(
        f"engine ({figures['engine']}): {figures['rounds_per_s']:,} rounds/s at {POSITIONS} "
        f"positions "
        f"({figures['us_per_round']} µs a round, {figures['inputs_per_s']:,} inputs/s, "
        f"{figures['events_per_s']:,} events/s; target {TARGET_ROUNDS_PER_S:,} rounds/s)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
