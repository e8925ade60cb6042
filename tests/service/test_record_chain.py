"""Tamper-evident records (docs/feed.md): the table chains its round records as it journals
them, and the chain goes on across a restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from table_controller.feed.chain import breaks, verifies
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, session


def _records(journal: Journal) -> list[dict[str, Any]]:
    return [json.loads(m.payload) for m in journal.last_messages("rounds", 1000)]


def test_round_records_are_chained_and_the_chain_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    inputs = list(session(12))
    half = len(inputs) // 2
    runner = TableRunner(config(path), Journal(path))
    for inp in inputs[:half]:
        runner.handle(inp)
    runner.journal.close()
    runner = TableRunner(config(path), Journal(path))
    try:
        for inp in inputs[half:]:
            runner.handle(inp)
        records = _records(runner.journal)
    finally:
        runner.journal.close()
    assert len(records) >= 10
    assert all(verifies(r) for r in records)
    assert records[0]["prev_hash"] is None
    assert breaks(records) == []
    # Altering one stored amount is found, by its own hash and by its successor's link.
    altered = [dict(r) for r in records]
    altered[3]["net"] = (altered[3]["net"] or 0) + 100
    assert not verifies(altered[3])
    assert [b.round_id for b in breaks(altered)] != []
    # So is a dropped record.
    assert breaks(records[:4] + records[5:]) != []
