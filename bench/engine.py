"""Engine benchmark: rounds per second of the pure engine at seven positions.

``python -m bench.engine`` first plays a seeded session through the engine to
write its input journal (random wagers with chip values on up to seven
positions and on the tie spots, ``NO_MORE_BETS``, card reads, a war or a
surrender on each tie, a reshuffle at the cover card), then times only the
replay of that journal through ``transition()``: no I/O, no input building.
It prints the figures and writes ``bench/results/engine.json``.
``--profile`` prints where the time goes. Speed is measured here, never
asserted in tests.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import random
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from table_controller.engine import (
    DECK,
    CardRead,
    ConsolePress,
    CoverRead,
    Event,
    Input,
    Outcome,
    Phase,
    RoundRecorded,
    SpotsChanged,
    TableSetup,
    TableState,
    initial_state,
    spot_bit,
    transition,
)
from table_controller.engine.rules import PROFILES, RulesName

RESULTS = Path(__file__).resolve().parent / "results" / "engine.json"
TARGET_ROUNDS_PER_S = 50_000
POSITIONS = 7
ORIGIN = datetime(2024, 1, 1, tzinfo=UTC)


def journal(setup: TableSetup, rounds: int, seed: int) -> list[Input]:
    """A seeded session of ``rounds`` settled rounds, as the inputs a table would journal."""
    rng = random.Random(seed)
    state: TableState = initial_state(setup)
    inputs: list[Input] = []
    ticks = 0
    k = 0
    n = 0
    settled = 0
    shoe: list[str] = []
    cover = 0
    chips: dict[int, int] = {}

    def feed(inp: Input) -> None:
        nonlocal state, settled
        state, out = transition(state, inp)
        inputs.append(inp)
        settled += sum(1 for o in out if isinstance(o, RoundRecorded))

    def at() -> datetime:
        nonlocal ticks
        ticks += 1
        return ORIGIN + timedelta(milliseconds=ticks * 250)

    def press(action: str, arg: str | None = None) -> None:
        nonlocal k
        k += 1
        feed(ConsolePress(at(), k, action, arg))

    def layout() -> None:
        present = 0
        for b in chips:
            present |= 1 << b
        feed(SpotsChanged(at(), present, 0, tuple(sorted(chips.items()))))

    while settled < rounds:
        if state.phase is Phase.SHUFFLE_DUE or not shoe:
            shoe = list(DECK) * setup.decks
            rng.shuffle(shoe)
            cover = len(shoe) // 4
            press("SHUFFLED")
        chips.clear()
        for p in range(1, setup.positions + 1):
            if rng.random() < 0.85:
                chips[spot_bit(p, 0)] = rng.choice((500, 1000, 2500, 10000))
                if rng.random() < 0.3:
                    chips[spot_bit(p, 1)] = rng.choice((100, 500))
        if not chips:
            chips[spot_bit(1, 0)] = 500
        layout()
        press("NO_MORE_BETS")
        before = settled
        while settled == before:
            if state.phase is Phase.TIE_DECISION:
                tied = [
                    h for h in state.round.hands if h.outcome is Outcome.TIE and h.decision is None
                ]
                war = [h for h in tied if rng.random() < 0.7]
                for h in war:
                    chips[spot_bit(h.position, 2)] = h.initial.amount or 500
                if war:
                    layout()
                for h in tied:
                    press("WAR" if h in war else "SURRENDER", str(h.position))
                continue
            if len(shoe) == cover and not state.shoe.cover_seen:
                n += 1
                feed(CoverRead(at(), n))
            n += 1
            feed(CardRead(at(), n, shoe.pop()))
    return inputs


def replay_time(setup: TableSetup, inputs: Sequence[Input]) -> tuple[float, float, int, int]:
    """Wall and CPU seconds to run ``inputs`` through ``transition()``; rounds, events."""
    state = initial_state(setup)
    step = transition
    rounds = 0
    events = 0
    start = time.perf_counter()
    cpu_start = time.process_time()
    for inp in inputs:
        state, out = step(state, inp)
        for o in out:
            if type(o) is RoundRecorded:
                rounds += 1
            elif type(o) is Event:
                events += 1
    return time.perf_counter() - start, time.process_time() - cpu_start, rounds, events


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
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
    }
    print(
        f"engine: {figures['rounds_per_s']:,} rounds/s at {POSITIONS} positions "
        f"({figures['us_per_round']} µs a round, {figures['inputs_per_s']:,} inputs/s, "
        f"{figures['events_per_s']:,} events/s; target {TARGET_ROUNDS_PER_S:,} rounds/s)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
