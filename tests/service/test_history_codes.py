"""``history`` names each round's alerts by their code, not by id alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from table_controller.cli import main
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, session


def test_history_shows_alert_codes_beside_their_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "war-07.sqlite3"
    runner = TableRunner(config(path), Journal(path))
    for inp in session(40):
        runner.handle(inp)
    raised = {
        json.loads(m.payload)["alert"]: json.loads(m.payload)["code"]
        for m in runner.journal.last_messages("alerts", 10_000)
    }
    runner.journal.close()
    assert raised, "the seeded session raises alerts"
    toml = tmp_path / "table.toml"
    toml.write_text(
        '[table]\nid = "war-07"\nsite = "main-floor"\n'
        '[devices]\nshoe = "socket://127.0.0.1:9"\nconsole = "socket://127.0.0.1:9"\n'
        f'[storage]\npath = "{path}"\n'
    )
    assert main(["history", "--config", str(toml), "--last", "40"]) == 0
    shown = re.findall(r"([A-Z_?]+) \((A\d+-\d{8}T\d{6}Z)\)", capsys.readouterr().out)
    assert shown
    assert all(raised.get(alert) == code for code, alert in shown)
