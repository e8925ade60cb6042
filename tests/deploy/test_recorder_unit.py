"""The recorder's systemd unit: the command it runs, its supervision and its hardening."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.pit_setup import DEPLOY
from tests.deploy.test_table_pc import INSTALLED_BINARY, MAX_EXPOSURE, Unit, parse_unit

UNIT = DEPLOY / "systemd" / "table-controller-recorder.service"
CONFIG = "/etc/casino-war/recorder.toml"


@pytest.fixture(scope="module")
def unit() -> Unit:
    return parse_unit(UNIT.read_text(encoding="utf-8"))


def _one(unit: Unit, section: str, key: str) -> str:
    values = unit[section].get(key, [])
    assert len(values) == 1, f"[{section}] {key}: {values}"
    return values[0]


def test_unit_runs_the_recorder_with_its_config(unit: Unit) -> None:
    argv = shlex.split(_one(unit, "Service", "ExecStart"))
    assert argv == [INSTALLED_BINARY, "recorder", "--config", CONFIG]


def test_unit_is_supervised_and_stops_cleanly(unit: Unit) -> None:
    assert _one(unit, "Service", "Restart") == "always"
    assert _one(unit, "Unit", "StartLimitIntervalSec") == "0"
    assert _one(unit, "Service", "KillSignal") == "SIGTERM"
    assert int(_one(unit, "Service", "TimeoutStopSec")) >= 10
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_unit_runs_as_its_own_user_without_devices(unit: Unit) -> None:
    assert _one(unit, "Service", "User") == "casino-recorder"
    assert _one(unit, "Service", "StateDirectory") == "casino-recorder"
    assert _one(unit, "Service", "PrivateDevices") == "yes"
    assert _one(unit, "Service", "ProtectSystem") == "strict"
    assert unit["Service"]["CapabilityBoundingSet"] == []


def _copy(tmp_path: Path) -> Path:
    here = Path(sys.executable).parent / "table-controller"
    text = UNIT.read_text(encoding="utf-8").replace(INSTALLED_BINARY, str(here))
    copy = tmp_path / UNIT.name
    copy.write_text(text, encoding="utf-8")
    return copy


def _analyze(*args: str) -> subprocess.CompletedProcess[str]:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (Debian package systemd) is needed to check the unit"
    return subprocess.run([analyze, *args], capture_output=True, text=True, timeout=60, check=False)


def test_systemd_accepts_every_directive(tmp_path: Path) -> None:
    proc = _analyze("verify", "--man=no", str(_copy(tmp_path)))
    assert (proc.returncode, proc.stderr) == (0, "")


def test_systemd_security_exposure_is_low(tmp_path: Path) -> None:
    proc = _analyze("security", "--offline=true", "--no-pager", str(_copy(tmp_path)))
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", proc.stdout)
    assert found, proc.stdout[-2000:] + proc.stderr
    assert float(found.group(1)) <= MAX_EXPOSURE


def test_readme_installs_the_recorder_unit() -> None:
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    assert f"systemd/{UNIT.name} /etc/systemd/system/" in readme
    assert CONFIG in readme
