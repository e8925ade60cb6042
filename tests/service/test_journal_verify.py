"""``table-controller journal verify``: the checkpoints a restart starts from are what the
inputs say, and an altered checkpoint is named."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from table_controller.cli import main
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, session


def _table(tmp_path: Path, rounds: int) -> Path:
    path = tmp_path / "war-07.sqlite3"
    runner = TableRunner(config(path), Journal(path), checkpoint_every=100)
    for inp in session(rounds):
        runner.handle(inp)
    runner.journal.close()
    toml = tmp_path / "table.toml"
    toml.write_text(
        '[table]\nid = "war-07"\nsite = "main-floor"\n'
        '[devices]\nshoe = "socket://127.0.0.1:9"\nconsole = "socket://127.0.0.1:9"\n'
        f'[storage]\npath = "{path}"\n'
    )
    return toml


def test_verify_replays_from_the_oldest_checkpoint_and_checks_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = _table(tmp_path, 30)
    db = sqlite3.connect(tmp_path / "war-07.sqlite3")
    held = [n for (n,) in db.execute("SELECT input_n FROM checkpoints ORDER BY input_n")]
    db.close()
    assert len(held) > 3
    assert main(["journal", "verify", "--config", str(toml)]) == 0
    out = capsys.readouterr().out
    assert f"checkpoints checked equal to the replay: {len(held) - 1}" in out
    assert out.rstrip().endswith("OK")


def test_an_altered_checkpoint_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = _table(tmp_path, 30)
    db = sqlite3.connect(tmp_path / "war-07.sqlite3")
    n, body = db.execute(
        "SELECT input_n, body FROM checkpoints ORDER BY input_n DESC LIMIT 1 OFFSET 1"
    ).fetchone()
    data = json.loads(body)
    data["snapshot"]["round_id"] += 1
    db.execute("UPDATE checkpoints SET body = ? WHERE input_n = ?", (json.dumps(data), n))
    db.commit()
    db.close()
    assert main(["journal", "verify", "--config", str(toml)]) == 1
    out = capsys.readouterr().out
    assert f"MISMATCH: checkpoint at input {n} differs from the replay in: round_id" in out


def test_an_altered_round_record_breaks_the_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = _table(tmp_path, 12)
    assert main(["journal", "verify", "--config", str(toml)]) == 0
    assert "hash chain unbroken" in capsys.readouterr().out
    db = sqlite3.connect(tmp_path / "war-07.sqlite3")
    rowid, payload = db.execute(
        "SELECT seq, payload FROM outbox WHERE kind = 'rounds' ORDER BY seq LIMIT 1 OFFSET 2"
    ).fetchone()
    record = json.loads(payload)
    record["net"] = (record["net"] or 0) - 500
    altered = json.dumps(record).encode()
    db.execute("UPDATE outbox SET payload = ? WHERE seq = ?", (altered, rowid))
    db.commit()
    db.close()
    assert main(["journal", "verify", "--config", str(toml)]) == 1
    out = capsys.readouterr().out
    assert f"BROKEN: round {record['round_id']}" in out
