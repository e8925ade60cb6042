"""Issue 12: events, alerts, round records and the retained views are written as JSON straight
from the engine's dicts, without the payload models on the card's path. Every message a seeded
session produces must still validate, and read back through its model it must be the very
payload that was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from table_controller.feed.payloads import parse_payload
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, session


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_every_message_validates_and_is_what_its_model_writes(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "j.sqlite3"
    runner = TableRunner(config(path), Journal(path))
    # The retained views go to the publisher from memory, not through the journal.
    views: list[OutboxMessage] = []
    runner.publish_view = views.append
    kinds: set[str] = set()
    try:
        for inp in session(25, seed=seed):
            runner.handle(inp)
            runner.flush_views()
            journaled = runner.journal.pending(1000)
            assert not {m.kind for m in journaled} & {"state", "stats"}
            assert {m.kind for m in views} <= {"state", "stats"}
            for msg in [*journaled, *views]:
                model = parse_payload(msg.payload)
                assert json.loads(model.to_json()) == json.loads(msg.payload), msg.topic
                assert model.id == msg.id
                kinds.add(msg.kind)
                if msg.feed_seq is not None:
                    # docs/feed.md: every feed message names the epoch its feed_seq counts in.
                    assert json.loads(msg.payload)["epoch"] == runner.journal.epoch, msg.topic
            runner.journal.mark_sent([m.id for m in runner.journal.pending(1000)])
            views.clear()
    finally:
        runner.journal.close()
    assert {"events", "rounds", "alerts", "state", "stats"} <= kinds
