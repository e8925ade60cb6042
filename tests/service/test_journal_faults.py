"""Issue 11: a journal belongs to one table, faults stop it safely, and restarts start from a
checkpoint. The runner is fed engine inputs directly (no devices): what is under test is the
journal's side."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from table_controller.engine import ConsolePress, ConsoleReply, ConsoleShow, Phase, Refusal
from table_controller.engine.inputs import CardRead
from table_controller.feed.payloads import parse_payload
from table_controller.service.config import TableConfig
from table_controller.service.errors import (
    EXIT_JOURNAL,
    JournalCorrupt,
    JournalFault,
    JournalLocked,
    JournalMismatch,
)
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, fill, session

ROOT = Path(__file__).resolve().parents[2]


def runner_on(path: Path, **table: object) -> TableRunner:
    return TableRunner(config(path, **table), Journal(path))


def _run_on(journal: Path, toml: Path) -> subprocess.CompletedProcess[str]:
    """``table-controller run`` on ``journal``, its devices and broker nowhere."""
    toml.write_text(
        '[table]\nid = "war-07"\nsite = "main-floor"\n'
        '[devices]\nshoe = "socket://127.0.0.1:9"\nconsole = "socket://127.0.0.1:9"\n'
        f'[mqtt]\nurl = "mqtt://127.0.0.1:9"\n[storage]\npath = "{journal}"\n'
    )
    return subprocess.run(
        [sys.executable, "-m", "table_controller.cli", "run", "--config", str(toml)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def refusal(cfg: TableConfig, path: Path) -> str:
    journal = Journal(path)
    try:
        with pytest.raises(JournalMismatch) as err:
            TableRunner(cfg, journal)
    finally:
        journal.close()
    return str(err.value)


def test_the_journal_connection_syncs_every_commit(tmp_path: Path) -> None:
    runner = runner_on(tmp_path / "j.sqlite3")
    try:
        for inp in session(1)[:20]:
            runner.handle(inp)
        runner.journal.mark_sent([m.id for m in runner.journal.pending()])
        db = runner.journal._db
        # 2 is FULL: a commit that returned is on the disk (a power cut loses nothing).
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        runner.journal.close()


def test_a_second_process_is_refused_naming_the_file_and_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with Journal(path):
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from table_controller.service.journal import Journal\n"
                "try:\n    Journal(sys.argv[1])\n"
                "except Exception as e:\n    print(type(e).__name__, e); sys.exit(3)",
                str(path),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == 3, child.stderr
        assert child.stdout.startswith("JournalLocked")
        assert str(path) in child.stdout
        assert f"pid {os.getpid()}" in child.stdout
        with pytest.raises(JournalLocked, match="only one controller"):
            Journal(path)
        # Readers take no lock: history and journal verify run beside the table.
        with Journal(path, readonly=True) as reader:
            assert reader.epoch
    with Journal(path):
        pass


def test_another_tables_config_is_refused_with_the_key_named(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    runner_on(path).journal.close()
    assert re.match(
        r"table\.id: .*'war-07'.*not 'war-08'", refusal(config(path, id="war-08"), path)
    )
    cfg = config(path).model_copy(
        update={"table": config(path).table.model_copy(update={"site": "annex"})}
    )
    assert refusal(cfg, path).startswith("table.site: ")


def test_settings_change_only_between_shoes_journaled_and_published(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    runner = runner_on(path)
    inputs = session(3)
    for inp in inputs:
        runner.handle(inp)
    assert runner.engine.snapshot().phase is not Phase.SHUFFLE_DUE
    seq = runner.engine.snapshot().seq
    runner.journal.close()
    assert re.match(
        r"table\.positions: .*only between shoes", refusal(config(path, positions=5), path)
    )

    # Between shoes (a new table is shuffle_due): accepted, journaled, published.
    fresh = tmp_path / "fresh.sqlite3"
    runner_on(fresh).journal.close()
    changed = TableRunner(config(fresh, positions=5), Journal(fresh))
    try:
        assert changed.engine.setup.positions == 5
        (event,) = [
            parse_payload(m.payload)
            for m in changed.journal.pending()
            if b"settings_changed" in m.payload
        ]
        assert event.model_dump()["changed"] == ["table.positions"]
    finally:
        changed.journal.close()
    # The change survives a restart: it is in the journal, not only in the config.
    again = TableRunner(config(fresh, positions=5), Journal(fresh))
    assert again.engine.setup.positions == 5
    assert seq > 0
    again.journal.close()


def _scribble(path: Path) -> None:
    with Journal(path) as j:
        for i in range(300):
            j.record({"i": i, "pad": "x" * 500}, [])
    # Close cleanly (WAL checkpointed into the file), then damage a page in the middle.
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(os.urandom(4096))


def test_a_damaged_file_fails_at_start_naming_it_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    _scribble(path)
    with pytest.raises(JournalCorrupt, match="damaged") as err:
        Journal(path)
    assert str(path) in str(err.value)
    assert "move it aside" in str(err.value)
    child = _run_on(path, tmp_path / "table.toml")
    # The unit's RestartPreventExitStatus keeps this status from a restart loop.
    assert child.returncode == EXIT_JOURNAL, child.stderr
    assert "damaged" in child.stderr
    assert str(path) in child.stderr


def test_restart_replays_only_the_inputs_after_the_latest_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    inputs = session(40)
    runner = TableRunner(config(path), Journal(path), checkpoint_every=100)
    for inp in inputs:
        runner.handle(inp)
    final = runner.engine.snapshot()
    latest = runner.journal.latest_checkpoint()
    total = runner.journal.last_input_number()
    runner.journal.close()
    assert latest is not None
    again = TableRunner(config(path), Journal(path))
    try:
        assert again.replayed == total - latest.input_n < 100
        assert again.engine.snapshot() == final
    finally:
        again.journal.close()


# -- disk full ----------------------------------------------------------------------------


def test_disk_full_the_input_is_not_acted_on_and_the_table_recovers_by_itself(
    small_disk: Path,
) -> None:
    async def scenario() -> None:
        path = small_disk / "j.sqlite3"
        runner = TableRunner(config(path), Journal(path))
        try:
            await run(runner)
        finally:
            runner.journal.close()

    async def run(runner: TableRunner) -> None:
        offered: list[bytes] = []
        runner.publish_unjournaled = lambda msg: offered.append(msg.payload)
        inputs = session(2)
        deal = next(i for i, inp in enumerate(inputs) if isinstance(inp, CardRead))
        for inp in inputs[:deal]:
            assert runner.handle(inp)
        before = runner.engine.snapshot()
        numbered = runner.journal.last_input_number()
        filler = fill(runner.journal.path.parent)

        card = inputs[deal]
        assert not runner.handle(card)
        # The engine did not run ahead of the disk.
        assert runner.engine.snapshot() == before
        assert runner.fault is not None
        assert "cannot commit" in runner.fault
        press = ConsolePress(at=card.at, k=900, action="VOID_ROUND", arg=None)
        assert not runner.handle(press)
        answers = []
        while not runner.console_out.empty():
            answers.append(runner.console_out.get_nowait())
        assert ConsoleReply(900, Refusal.JOURNAL_FAULT) in answers
        assert any(isinstance(a, ConsoleShow) and "JOURNAL" in a.text for a in answers)
        # The alert and the status went out from memory, and validate.
        kinds = [parse_payload(p).model_dump() for p in offered]
        assert any(k.get("code") == "JOURNAL_FAULT" for k in kinds)
        assert any((k.get("journal") or {}).get("state") == "fault" for k in kinds)
        assert not runner.retry_journal()

        filler.unlink()
        assert runner.retry_journal()
        assert runner.fault is None
        # The read the journal could not take is asked of the shoe again (RESEND).
        assert runner.shoe_resync.is_set()
        runner.shoe_resync.clear()  # the shoe task reopens the shoe, which sends the read again
        assert runner.handle(dataclasses.replace(card))
        assert runner.journal.last_input_number() > numbered
        codes = [parse_payload(m.payload).model_dump() for m in runner.journal.pending(1000)]
        resolved = [
            c for c in codes if c.get("code") == "JOURNAL_FAULT" and c["schema"] == "table-alert/1"
        ]
        assert [c["resolved_by"] for c in resolved] == [None, "JOURNAL"]

    asyncio.run(scenario())


def test_a_full_disk_at_start_is_a_fault_a_restart_mends_not_a_damaged_journal(
    small_disk: Path,
) -> None:
    """Stopped cleanly, then the disk filled: the journal is sound, and the unit must go on
    restarting it (status 1), not tell the operator to move a good journal aside."""
    path = small_disk / "j.sqlite3"
    runner = runner_on(path)
    for inp in session(1)[:30]:
        runner.handle(inp)
    runner.journal.close()
    filler = fill(small_disk)
    try:
        with pytest.raises(JournalFault, match="Free space") as err:
            Journal(path)
        assert "damaged" not in str(err.value)
        child = _run_on(path, small_disk.parent / "table.toml")
    finally:
        filler.unlink()
    assert child.returncode == 1, child.stderr
    assert "damaged" not in child.stderr
    Journal(path).close()  # sound all along
