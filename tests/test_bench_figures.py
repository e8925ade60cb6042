"""The benchmarks' own measuring tools: they count what they say they count."""

from __future__ import annotations

import os
import select
import threading
from pathlib import Path

import pytest

from bench.figures import journal_commit_ms, wake_cpu_us
from bench.latency import switched, switches


def test_switches_count_each_time_a_thread_of_the_process_blocks() -> None:
    blocks = 50
    before = switches(os.getpid())
    for _ in range(blocks):
        # Blocking is what is counted: a select on nothing for 1 ms always blocks.
        select.select([], [], [], 0.001)
    after = switches(os.getpid())
    assert str(threading.get_native_id()) in after
    voluntary, involuntary = switched(before, after)
    assert voluntary >= blocks
    assert involuntary >= 0


def test_switched_counts_a_thread_born_in_between_and_drops_one_that_ended() -> None:
    before = {"1": (10, 1), "2": (5, 0)}
    after = {"1": (15, 3), "3": (7, 2)}
    assert switched(before, after) == (5 + 7, 2 + 2)


def test_switches_of_another_process_read_its_threads() -> None:
    counts = switches(os.getppid())
    assert counts
    assert all(v >= 0 and n >= 0 for v, n in counts.values())
    assert sum(v for v, _ in counts.values()) > 0


def test_a_wake_costs_some_cpu_and_the_samples_are_checked() -> None:
    assert wake_cpu_us(5, 0.001) > 0
    with pytest.raises(ValueError, match="at least one sample"):
        wake_cpu_us(0, 0.001)


def test_the_commit_probe_writes_over_its_wal_as_a_table_in_service_does(tmp_path: Path) -> None:
    figures = journal_commit_ms(tmp_path, 30)
    assert figures["count"] == 30
    assert figures["wal_bytes_grown"] == 0
    assert list(tmp_path.iterdir()) == []  # the probe's files are gone
