"""A shoe's checkpoint is written after its last input's messages are out (issue 12: the
shoe's last card waits for no serialising of the table), and is still the state after
that input."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from table_controller.engine import Phase
from table_controller.service.checkpoint import load_engine
from table_controller.service.errors import JournalFault
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, session


def latest_n(journal: Journal) -> int | None:
    latest = journal.latest_checkpoint()
    return None if latest is None else latest.input_n


def test_a_shoes_last_input_is_published_before_its_checkpoint_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.sqlite3"
    runner = TableRunner(config(path), Journal(path))
    # At each publish: the input just journaled, and the newest checkpoint then.
    seen: list[tuple[int, int | None]] = []

    def publish(messages: Sequence[OutboxMessage]) -> None:
        seen.append((runner.journal.last_input_number(), latest_n(runner.journal)))

    runner.publish_journaled = publish
    ended: list[int] = []
    try:
        for inp in session(40):
            before = runner.engine.phase
            assert runner.handle(inp)
            if runner.engine.phase is Phase.SHUFFLE_DUE and before is not Phase.SHUFFLE_DUE:
                n = runner.journal.last_input_number()
                ended.append(n)
                # Out before its checkpoint, which then holds the state after it.
                assert (n, n) not in seen
                assert latest_n(runner.journal) == n
                latest = runner.journal.latest_checkpoint()
                assert latest is not None
                engine = load_engine(latest.body, latest.version)
                assert engine.snapshot() == runner.engine.snapshot()
        assert ended, "the session never ended a shoe"
    finally:
        runner.journal.close()


def test_a_checkpoint_not_written_is_written_after_the_next_input(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    runner = TableRunner(config(path), Journal(path))
    record_checkpoint = runner.journal.record_checkpoint
    refused: list[int] = []

    def full_once(
        input_n: int, checkpoint: tuple[int, str], *, now: datetime | None = None
    ) -> None:
        if not refused:
            refused.append(input_n)
            raise JournalFault("disk full")
        record_checkpoint(input_n, checkpoint, now=now)

    runner.journal.record_checkpoint = full_once  # type: ignore[method-assign]
    try:
        inputs = iter(session(40))
        while not refused:
            assert runner.handle(next(inputs))
        # The input that ended the shoe was acted on; the table is not at fault.
        assert runner.fault is None
        assert runner.journal.last_input_number() == refused[0]
        assert latest_n(runner.journal) is None
        assert runner.handle(next(inputs))
        assert latest_n(runner.journal) == refused[0] + 1
        latest = runner.journal.latest_checkpoint()
        assert latest is not None
        assert load_engine(latest.body, latest.version).snapshot() == runner.engine.snapshot()
    finally:
        runner.journal.close()
