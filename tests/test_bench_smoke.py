"""The benchmarks still run: each at a tiny size, as ``python -m bench.<name> --quick``.

Only the shape and sanity of the JSON each writes is checked here, never a
speed (speed is measured in bench/, not asserted in tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import summary
from bench.seeder import ROUND_S

ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 100.0
MACHINE_KEYS = {"nproc", "cpu", "python", "implementation", "arch", "kernel", "broker", "loadavg"}


def _run(*args: str) -> None:
    """``python -m <args>`` from the repository root; fails with its output if it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _check_percentiles(figures: dict[str, Any], count: int) -> None:
    assert figures["count"] == count
    assert 0 < figures["p50_ms"] <= figures["p90_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert figures["p50_ms"] <= figures["max_ms"]


@pytest.mark.parametrize("seed", [3], ids=lambda s: f"seed={s}")
def test_latency_bench_writes_its_figures(tmp_path: Path, seed: int) -> None:
    out = tmp_path / "latency.json"
    _run(
        "bench.latency",
        "--quick",
        "--seed",
        str(seed),
        "--journal-dir",
        str(tmp_path),
        "--out",
        str(out),
    )
    data = _load(out)
    assert data["benchmark"] == "latency"
    assert data["machine"].keys() >= MACHINE_KEYS
    assert data["journal_dir"] == str(tmp_path)
    assert data["filesystem"] != "unknown"
    for name in ("idle", "load"):
        run = data[name]
        # At least the 20 cards asked for; the last round is played out, which takes
        # at most 20 more (a burn, 7 + 1 cards, 3 war burns, 7 + 1 war cards).
        assert 20 <= run["count"] < 20 + 20
        _check_percentiles(run, run["count"])
        assert run["rounds"] >= 2
        assert 0 < run["round_settled_p50_ms"] <= run["round_settled_p99_ms"]
        assert run["cpu_ms_per_round"] > 0
        # A round needs its threads to wake at least once per card.
        assert run["wakes_per_round"] >= run["count"] / run["rounds"]
        assert run["preemptions_per_round"] >= 0
        # The work's floor replays what the controller journaled: the run's rounds.
        work = run["work_cpu"]
        assert work["back_to_back"]["rounds"] >= run["rounds"]
        assert 0 < work["paced"]["rounds"] <= work["back_to_back"]["rounds"]
        assert work["paced"]["inputs"] <= work["back_to_back"]["inputs"]
        for fed in work.values():
            assert fed["ms_per_round"] > 0
            assert fed["us_per_input"] > 0
    for key in ("p50_ms", "p99_ms", "floor_p50_ms", "floor_p99_ms", "commit_p50_ms"):
        assert data[key] > 0
    assert data["p50_ms"] == data["idle"]["p50_ms"]
    assert data["work_cpu_ms_per_round"] == data["idle"]["work_cpu"]["paced"]["ms_per_round"]
    assert data["wake_cpu_us"] > 0
    wakes = data["idle"]["wakes_per_round"] * data["wake_cpu_us"] / 1000
    assert data["wake_floor_ms_per_round"] == pytest.approx(wakes, abs=0.001)
    assert data["meets"]["p99_ms"] is (data["p99_ms"] <= 2.0)
    # make bench's summary line sets the CPU beside its floors.
    (line, _) = summary(tmp_path, ["latency"])
    assert f"CPU {data['cpu_ms_per_round']} ms/round" in line
    assert f"the work alone {data['work_cpu_ms_per_round']}" in line
    assert f"its wakes alone {data['wake_floor_ms_per_round']} ms/round" in line


def test_journal_bench_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "journal.json"
    _run(
        "bench.journal",
        "--rounds",
        "30",
        "--keep-days",
        "0",
        "--dir",
        str(tmp_path),
        "--out",
        str(out),
    )
    data = _load(out)
    assert data["rounds"] == 30
    assert data["restart_s"] > 0
    assert data["file_bytes"] > 0
    assert 0 < data["inputs_replayed_at_restart"] < data["inputs"]
    assert data["write_ms_per_round"] > 0


@pytest.mark.parametrize("seed", [5], ids=lambda s: f"seed={s}")
def test_service_bench_writes_its_figures(tmp_path: Path, seed: int) -> None:
    out = tmp_path / "service.json"
    _run("bench.service", "--quick", "--seed", str(seed), "--out", str(out))
    data = _load(out)
    assert data["benchmark"] == "service"
    assert data["machine"].keys() >= MACHINE_KEYS
    (start,) = data["starts"]
    assert 0 < start["online_s"] <= start["devices_ok_s"]
    assert start["restart_online_s"] > 0
    assert start["rounds"] == data["rounds_per_start"] == 2
    # Seven positions and the dealer, plus the burn card of the new shoe.
    assert start["cards"] >= 2 * 8 + 1
    # A Python process with the service's imports holds megabytes, not bytes or gigabytes.
    assert 5 < start["rss_online_mb"] < 1000
    assert start["rss_after_rounds_mb"] <= start["rss_peak_mb"]
    assert data["online_s_max"] == start["online_s"]
    assert data["meets_online_target"] is (start["online_s"] <= data["target_online_s"])
    assert data["meets_rss_target"] is (start["rss_after_rounds_mb"] <= data["target_rss_mb"])


@pytest.mark.parametrize("seed", [7], ids=lambda s: f"seed={s}")
def test_tables_bench_loses_nothing_at_two_tables(tmp_path: Path, seed: int) -> None:
    out = tmp_path / "tables.json"
    _run(
        "bench.tables",
        "--quick",
        "--seed",
        str(seed),
        "--journal-dir",
        str(tmp_path),
        "--out",
        str(out),
    )
    data = _load(out)
    assert data["benchmark"] == "tables"
    (run,) = data["runs"]
    assert run["tables"] == 2
    assert run["rounds"] == 2 * run["rounds_per_table"]
    assert run["naks"] == 0  # the dealer loop pressed nothing the table refused
    enqueued = run["enqueued"]
    # Every round: its record, its events (bets closed, at least 2 cards, settled).
    assert enqueued["rounds"] == run["rounds"]
    assert enqueued["events"] >= run["rounds"] * 4
    assert enqueued["status"] >= 2  # one per table on connecting
    assert run["expected"] > 0
    assert run["received_unique"] == run["expected"]
    assert run["lost"] == 0
    assert run["lost_by_kind"] == {}
    assert run["discarded_by_pit_queue"] == 0
    assert run["unsent_non_retained"] == 0
    assert run["outbox_left"] == 0
    assert run["pit_tables_seen"] == 2
    assert run["pit_event_gaps"] == 0
    assert run["pit_malformed"] == run["pit_unexpected"] == run["pit_internal_errors"] == 0
    assert run["nothing_lost"] is True
    assert data["meets_target"] is False  # two tables are not the 200 of the target


def test_floor_bench_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "floor.json"
    _run("bench.floor", "--quick", "--out", str(out))
    data = _load(out)
    assert data["rounds_today"] == data["tables"] * int(data["hours"] * 3600 // ROUND_S) + 3
    assert data["aggregate_ms"] > 0
    assert 0 < data["report_next_ms"] <= data["report_next_max_ms"]
    assert data["report_first_ms"] > 0
    assert set(data["machine"]) >= MACHINE_KEYS


def test_bench_runs_every_benchmark_it_is_given(tmp_path: Path) -> None:
    """``python -m bench`` (``make bench``) drives the engine's and the devices' benchmarks."""
    _run("bench", "--quick", "--only", "engine", "devices", "--out-dir", str(tmp_path))
    engine = _load(tmp_path / "engine.json")
    assert engine["positions"] == 7
    assert engine["rounds"] >= 200
    devices = _load(tmp_path / "devices.json")
    assert devices["codec_frames"] == 2000
    assert devices["shoe_reads"] > 0
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["devices.json", "engine.json"]
