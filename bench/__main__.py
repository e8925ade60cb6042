"""``python -m bench`` (``make bench``): every benchmark in turn, then a summary.

engine
    pure engine rounds per second at seven positions (``bench/engine.py``)
devices
    the line codec and cards through the shoe driver (``bench/devices.py``)
latency
    a shoe's CARD frame to its ``card`` event at an MQTT 5 subscriber, beside a
    bare paho publish → receive (``bench/latency.py``)
service
    ``table-controller run``: time to ``status`` online and resident memory
    (``bench/service.py``)
tables
    50 and 200 tables on one Mosquitto with the pit consuming everything
    (``bench/tables.py``)
journal
    write cost, restart time and file size after 1,000 rounds through the
    service's write path (``bench/journal.py``; ``make bench`` also runs 100,000)
recorder
    300 light tables at 20x a table's pace into one recorder on PostgreSQL
    (``bench/recorder.py``)
floor
    the floor page's report of a busy day, first and on each update, beside the
    report's own aggregate (``bench/floor.py``)

Each writes ``bench/results/<name>.json`` (or under ``--out-dir``) and prints
its figures; the summary compares them with the targets. ``--quick`` runs each
at a tiny size (minutes become seconds; the figures then mean nothing).
``--only`` picks some. A benchmark that fails is reported and the others still
run; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import devices, engine, floor, journal, latency, recorder, service, tables

RESULTS_DIR = Path(__file__).resolve().parent / "results"

Main = Callable[[Sequence[str] | None], int]

BENCHMARKS: dict[str, tuple[Main, list[str]]] = {
    # name: (main, arguments for --quick)
    "engine": (engine.main, ["--rounds", "200", "--repeat", "1"]),
    "devices": (devices.main, ["--frames", "2000", "--shoes", "1", "--decks", "1"]),
    "latency": (latency.main, ["--quick"]),
    "service": (service.main, ["--quick"]),
    "tables": (tables.main, ["--quick"]),
    "journal": (journal.main, ["--rounds", "20", "--keep-days", "0"]),
    "recorder": (recorder.main, ["--tables", "3", "--rounds", "2", "--database", "sqlite"]),
    "floor": (floor.main, ["--quick"]),
}


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def _verdict(ok: object) -> str:
    return "meets" if ok else "MISSES"


def summary(out_dir: Path, names: Sequence[str]) -> list[str]:
    """One line per benchmark: its headline figures against the target."""
    lines: list[str] = []
    if "engine" in names and (e := _load(out_dir / "engine.json")):
        lines.append(
            f"(a) engine ({e.get('engine', 'interpreted')}): {e['rounds_per_s']:,} rounds/s at "
            f"{e['positions']} positions; "
            f"target ≥ {e['target_rounds_per_s']:,}: {_verdict(e['meets_target'])}"
        )
    if "devices" in names and (d := _load(out_dir / "devices.json")):
        lines.append(
            f"    devices: codec {d['codec_decode_frames_per_s']:,} frames/s decoded, "
            f"{d['shoe_reads_per_s_over_pty']:,} shoe reads/s through the driver"
        )
    if "latency" in names and (lat := _load(out_dir / "latency.json")):
        meets = lat["meets"]
        lines.append(
            f"(b) latency, idle: p50 {lat['p50_ms']} / p99 {lat['p99_ms']} / max "
            f"{lat['max_ms']} ms over {lat['cards']} cards (floor p50 {lat['floor_p50_ms']}, "
            f"commit p50 {lat['commit_p50_ms']}); p99 ≤ 2 ms: {_verdict(meets['p99_ms'])}, "
            f"p50 ≤ 2×floor+commit: {_verdict(meets['p50_ms'])}; CPU "
            f"{lat['cpu_ms_per_round']} ms/round: {_verdict(meets['cpu_ms_per_round'])} "
            f"(its floors: the work alone {lat['work_cpu_ms_per_round']}, its wakes alone "
            f"{lat['wake_floor_ms_per_round']} ms/round)"
        )
        load = lat["load"]
        lines.append(
            f"    under load (a card every {load['card_every_s']} s): p99 {load['p99_ms']} ms, "
            f"round_settled p99 {load['round_settled_p99_ms']} ms"
        )
    if "journal" in names and (j := _load(out_dir / "journal.json")):
        lines.append(
            f"(j) journal, {j['rounds']:,} rounds: {j['write_ms_per_round']} ms/round, "
            f"restart {j['restart_s']} s ({j['inputs_replayed_at_restart']} inputs replayed), "
            f"{j['file_bytes']:,} bytes"
        )
    if "service" in names and (s := _load(out_dir / "service.json")):
        lines.append(
            f"(c) service: online in {s['online_s_max']} s (worst of {len(s['starts'])}), "
            f"target ≤ {s['target_online_s']} s: {_verdict(s['meets_online_target'])}; "
            f"RSS {s['rss_after_rounds_mb_max']} MB after {s['rounds_per_start']} rounds, "
            f"target ≤ {s['target_rss_mb']} MB: {_verdict(s['meets_rss_target'])}"
        )
    if "tables" in names and (t := _load(out_dir / "tables.json")):
        for run in t["runs"]:
            lines.append(
                f"(d) tables: {run['tables']} tables, {run['messages_per_s']} msg/s at the pit, "
                f"{run['received_unique']}/{run['expected']} received, lost {run['lost']}"
            )
        lines.append(
            f"    target {t['target_tables']} tables with nothing lost: "
            f"{_verdict(t['meets_target'])}"
        )
    if "floor" in names and (f := _load(out_dir / "floor.json")):
        lines.append(
            f"(h) floor: today's report over {f['rounds_today']:,} rounds at {f['tables']} "
            f"tables, {f['report_first_ms']} ms first, {f['report_next_ms']} ms on an update "
            f"(its aggregate alone {f['aggregate_ms']} ms)"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="every benchmark at a tiny size")
    parser.add_argument(
        "--only", nargs="+", choices=list(BENCHMARKS), help="run only these benchmarks"
    )
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    args = parser.parse_args(argv)
    names = args.only or list(BENCHMARKS)
    failed: list[str] = []
    for name in names:
        run, quick_args = BENCHMARKS[name]
        bench_args = [
            *(quick_args if args.quick else []),
            "--out",
            str(args.out_dir / f"{name}.json"),
        ]
        print(f"== {name} ({' '.join(bench_args)})", flush=True)
        start = time.monotonic()
        try:
            code = run(bench_args)
        except Exception:
            traceback.print_exc()
            code = 1
        print(f"== {name}: {'done' if code == 0 else 'FAILED'} in {time.monotonic() - start:.0f} s")
        if code != 0:
            failed.append(name)
    print("\nsummary")
    for line in summary(args.out_dir, [n for n in names if n not in failed]):
        print(f"  {line}")
    if failed:
        print(f"  failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
