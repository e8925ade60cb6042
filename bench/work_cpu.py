"""The controller's own work per round, without its process: the floor of its CPU.

``bench.latency`` measures the controller's CPU per round as the kernel counts it
for the whole process: its device drivers, the event loop, the MQTT client and its
acknowledgements, the timers, and the work each input needs. This module times
that work alone: the inputs the controller journaled in the run, fed again in
this process to a :class:`~table_controller.service.runner.TableRunner` on a
journal of its own, on the same disk (the engine, the messages, the one commit,
the retained views), with nothing published and no other task.

It does so twice, on one thread's CPU clock (``time.thread_time_ns``):

* **back to back**: every input of the run, one after the other;
* **at the run's pace**: the first rounds' inputs, each after the same pause as
  it had in the run (capped at a second). A machine that idles between inputs
  runs the same code slower: its caches went cold, and an idle disk's fsync takes
  longer. This is the figure the controller's CPU per round compares with.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from table_controller.engine import Input
from table_controller.engine.codec import input_from_json
from table_controller.service.config import load_config
from table_controller.service.journal import Journal
from table_controller.service.outbox import OutboxMessage
from table_controller.service.runner import TableRunner

PACED_ROUNDS: Final = 20
"""Rounds fed at the run's own pace (at a card every 0.25 s, about a minute)."""
MAX_PAUSE_S: Final = 1.0


def _inputs(journal_path: Path) -> list[Input]:
    journal = Journal(journal_path, readonly=True)
    try:
        return [input_from_json(body) for body in journal.inputs()]
    finally:
        journal.close()


def _feed(config_path: Path, folder: Path, inputs: list[Input], *, paced: bool) -> dict[str, Any]:
    cfg = load_config(config_path)
    with tempfile.TemporaryDirectory(prefix="bench-work-", dir=folder) as tmp:
        storage = cfg.storage.model_copy(update={"path": Path(tmp) / "work.sqlite3"})
        cfg = cfg.model_copy(update={"storage": storage})
        journal = Journal(cfg.storage.path)
        rounds = 0

        def journaled(messages: Sequence[OutboxMessage]) -> None:
            nonlocal rounds
            rounds += sum(1 for m in messages if m.topic.endswith("/rounds"))

        try:
            runner = TableRunner(cfg, journal)
            runner.publish_journaled = journaled
            cpu_ns, fed = 0, 0
            last_at: datetime | None = None
            for inp in inputs:
                if paced and rounds >= PACED_ROUNDS:
                    break
                if paced and last_at is not None:
                    # Pacing, not waiting for anything: the pause the input had in the run.
                    time.sleep(min(MAX_PAUSE_S, max(0.0, (inp.at - last_at).total_seconds())))
                last_at = inp.at
                start = time.thread_time_ns()
                runner.handle(inp)
                runner.flush_views()
                cpu_ns += time.thread_time_ns() - start
                fed += 1
        finally:
            journal.close()
    return {
        "inputs": fed,
        "rounds": rounds,
        "ms_per_round": round(cpu_ns / 1e6 / max(1, rounds), 3),
        "us_per_input": round(cpu_ns / 1e3 / max(1, fed), 1),
    }


def work_cpu(config_path: Path, journal_path: Path, folder: Path) -> dict[str, Any]:
    """The work of the inputs the controller journaled, back to back and at the run's pace."""
    inputs = _inputs(journal_path)
    return {
        "back_to_back": _feed(config_path, folder, inputs, paced=False),
        "paced": _feed(config_path, folder, inputs, paced=True),
    }
