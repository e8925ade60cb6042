"""Issue 11, bounded disk: what is sent, old enough and (under ``acked``) acknowledged is pruned;
nothing unsent ever is; the file shrinks; ``history --last 10`` still works."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from table_controller.service.config import parse_config
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from table_controller.tools.history import rebuild
from tests.service.journal_tables import config, session


def _played(path: Path, rounds: int) -> TableRunner:
    runner = TableRunner(config(path), Journal(path), checkpoint_every=200)
    for inp in session(rounds):
        runner.handle(inp)
        runner.flush_views()
    return runner


def _sent_all(journal: Journal) -> None:
    while batch := journal.pending(1000):
        journal.mark_sent([m.id for m in batch])


def test_unacknowledged_and_unsent_messages_stay(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    runner = _played(path, 150)
    journal = runner.journal
    try:
        before = journal.outbox_depth()
        later = datetime.now(UTC) + timedelta(days=31)
        # Nothing is sent: nothing goes, whatever its age.
        assert journal.prune(keep_days=30, mode="age", now=later).messages == 0
        assert journal.outbox_depth() == before
        _sent_all(journal)
        # Sent but acknowledged by no recorder: kept under "acked".
        assert journal.prune(keep_days=30, mode="acked", now=later).messages == 0
        journal.record_ack("recorder-1", 40)
        pruned = journal.prune(keep_days=30, mode="acked", now=later)
        assert pruned.messages == 40
        assert [s for s, _ in journal.feed_range(1, 41)] == [41]
    finally:
        journal.close()


def test_a_recorder_retired_is_left_out_by_listing_those_that_remain(tmp_path: Path) -> None:
    """Every recorder that ever acked holds pruning back (a test recorder's, a retired
    one's last ack, for good); ``[storage] recorders`` names those whose acks count, each
    of them needed."""
    runner = _played(tmp_path / "j.sqlite3", 150)
    journal = runner.journal
    try:
        _sent_all(journal)
        later = datetime.now(UTC) + timedelta(days=31)
        journal.record_ack("recorder-old", 5)
        journal.record_ack("recorder-1", 40)
        both = ("recorder-1", "recorder-2")  # recorder-2 has not acked yet: nothing goes
        assert journal.prune(keep_days=30, mode="acked", recorders=both, now=later).messages == 0
        assert journal.prune(keep_days=30, mode="acked", now=later).messages == 5
        pruned = journal.prune(keep_days=30, mode="acked", recorders=["recorder-1"], now=later)
        assert pruned.messages == 35
        assert [s for s, _ in journal.feed_range(1, 41)] == [41]
    finally:
        journal.close()
    storage = {"path": "j.sqlite3", "recorders": ["recorder-1"]}
    devices = {"shoe": "socket://127.0.0.1:9", "console": "socket://127.0.0.1:9"}
    table = {"id": "war-07", "site": "main-floor", "rules": "ny"}
    cfg = parse_config({"table": table, "devices": devices, "storage": storage})
    assert cfg.storage.recorders == ("recorder-1",)


def test_pruning_bounds_the_file_and_keeps_history_and_restarts(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    runner = _played(path, 300)
    journal = runner.journal
    final = runner.engine.snapshot()
    top = runner.messages.feed_seq
    try:
        _sent_all(journal)
        journal.record_ack("recorder-1", top)
        pages = journal._db.execute("PRAGMA page_count").fetchone()[0]
        journal.prune(keep_days=0, mode="acked")
        # Incremental vacuum: the pages freed go back to the file system.
        db = journal._db
        assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert db.execute("PRAGMA freelist_count").fetchone()[0] < 10
        assert db.execute("PRAGMA page_count").fetchone()[0] < pages / 2
        first = journal.first_input_number()
        latest = journal.latest_checkpoint()
        assert first is not None
        assert latest is not None
        # Inputs go only up to a checkpoint, so a restart (and journal verify) can start there.
        assert journal.checkpoints().__next__().input_n == first - 1
        # The last 100 round records stay: history --last 10 works from the table alone.
        records, state = rebuild(config(path), journal, last=10)
        assert len(records) == 10
        assert records[-1]["round_id"] == final.stats.rounds + final.stats.voids
        assert state == final
        # The counter survives the messages that carried it.
        assert journal.last_feed_seq() == top
    finally:
        journal.close()
    again = TableRunner(config(path), Journal(path))
    try:
        assert again.engine.snapshot() == final
        assert again.messages.feed_seq == top
    finally:
        again.journal.close()


def test_settings_changed_after_every_input_was_pruned_hold_across_restarts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.sqlite3"
    runner = TableRunner(config(path), Journal(path), checkpoint_every=1)
    inputs = session(1)[:3]
    for inp in inputs:
        assert runner.handle(inp)
    _sent_all(runner.journal)
    later = inputs[-1].at + timedelta(days=31)
    assert runner.journal.prune(keep_days=30, mode="age", now=later).inputs == len(inputs)
    # The numbering goes on past what was pruned.
    assert runner.journal.last_input_number() == len(inputs)
    runner.journal.close()
    # New settings between shoes, then a restart on the same config: the change holds, and
    # is neither undone nor made twice.
    for _ in range(2):
        again = TableRunner(config(path, decks=8), Journal(path))
        try:
            assert again.engine.setup.decks == 8
            changes = [
                m
                for m in again.journal.last_messages("events", 50)
                if b"settings_changed" in m.payload
            ]
            assert len(changes) == 1
        finally:
            again.journal.close()
