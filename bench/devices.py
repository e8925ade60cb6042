"""Device benchmarks: the line codec's decode rate, and cards through the shoe driver.

``python -m bench.devices`` prints the figures and writes
``bench/results/devices.json``. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from drivers.lineframe.cards import DECK
from drivers.lineframe.codec import LineDecoder
from drivers.shoe import CardDrawn, CoverDrawn, ShoeClient, ShoeEvent, ShoeOnline
from drivers.shoe.frames import CardFrame, ShoeCondition, ShoeReport, StatusFrame, parse_report
from simulators.shoe import ShoeSimulator

RESULTS = Path(__file__).resolve().parent / "results" / "devices.json"
CHUNK_BYTES = 4096


def shoe_stream(frames: int, seed: int = 1) -> bytes:
    """A shoe's line: card reads with a heartbeat after every tenth."""
    rng = random.Random(seed)
    out: list[ShoeReport] = []
    for n in range(1, frames + 1):
        out.append(
            StatusFrame(n - 1, ShoeCondition.OK) if n % 10 == 0 else CardFrame(n, rng.choice(DECK))
        )
    return b"".join(frame.encode() for frame in out)


def bench_codec(frames: int) -> dict[str, float]:
    stream = shoe_stream(frames)
    chunks = [stream[i : i + CHUNK_BYTES] for i in range(0, len(stream), CHUNK_BYTES)]
    decoder = LineDecoder(parse_report)
    start = time.perf_counter()
    decoded = 0
    for chunk in chunks:
        decoded += len(decoder.feed(chunk))
    elapsed = time.perf_counter() - start
    assert decoded == frames, (decoded, frames)
    frame = CardFrame(1, DECK[0])
    start = time.perf_counter()
    for _ in range(frames):
        frame.encode()
    encode_elapsed = time.perf_counter() - start
    return {
        "codec_frames": frames,
        "codec_decode_frames_per_s": round(frames / elapsed),
        "codec_decode_mb_per_s": round(len(stream) / elapsed / 1e6, 2),
        "codec_encode_frames_per_s": round(frames / encode_elapsed),
    }


STEP_TIMEOUT_S = 60.0
"""Bound on waiting for the shoe to come online, or for a whole shoe's reads."""


async def bench_shoe(shoes: int, decks: int) -> dict[str, float]:
    """Whole shoes drawn at once into a pty; time until the driver has handed on every read."""
    async with ShoeSimulator(decks=decks, seed=1) as sim:
        url = await sim.serve_pty()
        async with ShoeClient(url) as client:
            # As the service reads it: each event to a sink as its bytes are read.
            online, reached = asyncio.Event(), asyncio.Event()
            target = 0

            def sink(event: ShoeEvent) -> None:
                if isinstance(event, ShoeOnline):
                    online.set()
                elif isinstance(event, CardDrawn | CoverDrawn) and event.n == target:
                    reached.set()

            feeding = asyncio.create_task(client.feed(sink))
            async with asyncio.timeout(STEP_TIMEOUT_S):
                await online.wait()
            total = 0
            elapsed = 0.0
            for _ in range(shoes):
                sim.load()
                target = sim.last_n + sim.remaining
                reached.clear()
                start = time.perf_counter()
                while sim.remaining:
                    sim.draw()
                async with asyncio.timeout(STEP_TIMEOUT_S):
                    await reached.wait()
                elapsed += time.perf_counter() - start
                total += decks * len(DECK) + 1
        await feeding
    return {
        "shoe_reads": total,
        "shoe_reads_per_s_over_pty": round(total / elapsed),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.devices", description=__doc__)
    parser.add_argument("--frames", type=int, default=200_000, help="frames for the codec run")
    parser.add_argument("--shoes", type=int, default=10, help="whole shoes through the driver")
    parser.add_argument("--decks", type=int, default=8, help="decks per shoe")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    args = parser.parse_args(argv)
    results: dict[str, object] = {
        "benchmark": "devices",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    results.update(bench_codec(args.frames))
    results.update(asyncio.run(bench_shoe(args.shoes, args.decks)))
    for key, value in results.items():
        print(f"{key:32} {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
