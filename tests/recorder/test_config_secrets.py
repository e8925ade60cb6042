"""The recorder's broker secret as the table's: never in clear to another machine, checked
with the config (naming the key, status 2, before any database is opened), and found
beside the config file when its path is relative."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from table_controller.recorder.config import load_config, parse_config
from table_controller.recorder.errors import RecorderConfigError
from tests.recorder.conftest import ROOT, SITE


def _mqtt(**keys: object) -> dict[str, object]:
    return {"mqtt": {"sites": [SITE], "username": "recorder-1"} | keys}


def test_a_password_in_clear_to_another_machine_is_refused(tmp_path: Path) -> None:
    remote = "mqtt://192.0.2.2:1883"
    with pytest.raises(RecorderConfigError, match=r"mqtt: .*in clear to 192\.0\.2\.2"):
        parse_config(_mqtt(url=remote, password_file="/etc/casino-war/mqtt.secret"))
    allowed = _mqtt(url=remote, password_file="s", allow_plaintext_password=True)
    assert parse_config(allowed).mqtt.allow_plaintext_password
    assert parse_config(_mqtt(url="mqtts://192.0.2.2:8883", password_file="s")).mqtt.url


def _write(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_secret_others_may_read_is_named_at_once_before_the_database(tmp_path: Path) -> None:
    _write(tmp_path / "mqtt.secret", "s3cret\n", 0o644)
    database = tmp_path / "recorder.db"
    toml = tmp_path / "recorder.toml"
    toml.write_text(
        f'[mqtt]\nsites = ["{SITE}"]\nusername = "recorder-1"\npassword_file = "mqtt.secret"\n'
        f'[database]\nurl = "sqlite://{database}"\n'
    )
    with pytest.raises(RecorderConfigError, match=r"mqtt\.password_file: .*mqtt\.secret"):
        load_config(toml)
    child = subprocess.run(
        [sys.executable, "-m", "table_controller.cli", "recorder", "--config", str(toml)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 2, child.stderr
    assert "Traceback" not in child.stderr
    assert "mqtt.password_file" in child.stderr
    assert not database.exists()  # refused before the database was opened, let alone migrated
    # The database's own commands need no broker secret: anyone allowed the database runs them.
    records = subprocess.run(
        [sys.executable, "-m", "table_controller.cli", "records", "--config", str(toml), "migrate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert records.returncode == 0, records.stderr
    (tmp_path / "mqtt.secret").chmod(0o600)
    cfg = load_config(toml)  # relative: beside the config, whatever the working directory
    assert cfg.mqtt.password_file == tmp_path / "mqtt.secret"
