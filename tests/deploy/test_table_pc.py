"""The table PC's files: the example config, the systemd unit and the udev rules,
each checked on its own and against the others (one device name, one table id,
one config path)."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from table_controller.cli import COMMANDS
from table_controller.service.config import TableConfig, parse_config
from tests.deploy.pit_setup import DEPLOY

UNIT = DEPLOY / "systemd" / "table-controller@.service"
UDEV = DEPLOY / "udev" / "99-table-controller.rules"
EXAMPLE = DEPLOY / "table.example.toml"
INSTALLED_BINARY = "/opt/table-controller/.venv/bin/table-controller"
MAX_EXPOSURE = 2.5  # systemd-analyze security: 0 is fully locked down, 10 is nothing

Unit = dict[str, dict[str, list[str]]]


def parse_unit(text: str) -> Unit:
    """systemd's unit syntax: repeated keys add up, an empty value resets the list."""
    sections: Unit = {}
    current: dict[str, list[str]] | None = None
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not logical and (not line or line[0] in "#;"):
            continue
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        line, logical = logical + line, ""
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"directive outside a section: {line!r}"
        key, sep, value = line.partition("=")
        assert sep, f"not a key=value line: {line!r}"
        values = current.setdefault(key.strip(), [])
        if value.strip():
            values.append(value.strip())
        else:
            values.clear()
    return sections


@pytest.fixture(scope="module")
def unit() -> Unit:
    return parse_unit(UNIT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def example() -> TableConfig:
    # The values only: the files it names (CA, secret) live on a table PC, not here;
    # load_config would check them (test_config.py covers that).
    return parse_config(tomllib.loads(EXAMPLE.read_text(encoding="utf-8")))


def _one(unit: Unit, section: str, key: str) -> str:
    values = unit[section].get(key, [])
    assert len(values) == 1, f"[{section}] {key}: {values}"
    return values[0]


def _words(unit: Unit, section: str, key: str) -> set[str]:
    return {w for v in unit[section].get(key, []) for w in v.split()}


def test_example_config_loads_and_matches_the_deployment(example: TableConfig) -> None:
    assert example.table.id == "war-07"
    # The pit broker confines a table to casino/<site>/table/<id>/# by username.
    assert example.mqtt.username == example.table.id
    assert example.topic_prefix == f"casino/{example.table.site}/table/{example.table.id}"
    assert example.mqtt.url.startswith("mqtts://")
    assert example.mqtt.url.endswith(":8883")
    assert example.mqtt.protocol == "5"
    assert str(example.mqtt.ca_file).startswith("/etc/table-controller/")
    assert str(example.mqtt.password_file).startswith("/etc/table-controller/")
    # The only place the service may write (StateDirectory=table-controller).
    assert example.storage.path.parent == Path("/var/lib/table-controller")
    assert example.decks == 6
    assert example.table.positions == 7


def test_example_devices_are_the_udev_names(example: TableConfig) -> None:
    links = set(re.findall(r'SYMLINK\+="([^"]+)"', UDEV.read_text(encoding="utf-8")))
    assert {example.devices.shoe, example.devices.console} == {f"/dev/{n}" for n in links}
    assert example.devices.sensors == f"usb://1209:0001?serial={_board_rule()['ATTR{serial}'][1]}"


def test_unit_runs_the_table_named_by_the_instance(unit: Unit) -> None:
    argv = shlex.split(_one(unit, "Service", "ExecStart"))
    assert argv[:2] == [INSTALLED_BINARY, "run"]
    assert argv[argv.index("--config") + 1] == "/etc/table-controller/%i.toml"
    assert "%i" in _one(unit, "Unit", "Description")


def test_unit_command_line_is_accepted_by_the_service(unit: Unit) -> None:
    argv = shlex.split(_one(unit, "Service", "ExecStart"))
    module_name, _ = COMMANDS[argv[1]]
    parser = argparse.ArgumentParser()
    importlib.import_module(module_name).configure(parser)
    assert parser.parse_args(argv[2:]).config == Path("/etc/table-controller/%i.toml")


def test_unit_is_supervised(unit: Unit) -> None:
    service = unit["Service"]
    assert _one(unit, "Service", "Type") == "notify"
    assert _one(unit, "Service", "NotifyAccess") == "main"
    assert int(_one(unit, "Service", "WatchdogSec")) > 0
    assert _one(unit, "Service", "Restart") == "always"
    assert _one(unit, "Unit", "StartLimitIntervalSec") == "0"  # never give up
    assert "BindsTo" not in unit["Unit"]  # a lost device is reported, not a stop
    assert service["KillMode"] == ["mixed"]
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_unit_does_not_restart_into_what_a_restart_cannot_cure(unit: Unit) -> None:
    """A bad config, a damaged or foreign journal, another controller as this table."""
    from table_controller.service.errors import EXIT_CONFIG, EXIT_IDENTITY, EXIT_JOURNAL

    held = {int(code) for code in _one(unit, "Service", "RestartPreventExitStatus").split()}
    assert held == {EXIT_CONFIG, EXIT_JOURNAL, EXIT_IDENTITY}


def test_unit_runs_as_its_own_user_with_device_groups(unit: Unit) -> None:
    assert _one(unit, "Service", "User") == "table-controller"
    assert _one(unit, "Service", "Group") == "table-controller"
    assert {"dialout", "plugdev"} <= _words(unit, "Service", "SupplementaryGroups")
    assert _one(unit, "Service", "StateDirectory") == "table-controller"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("NoNewPrivileges", "yes"),
        ("DevicePolicy", "closed"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        ("ProtectControlGroups", "yes"),
        ("RestrictSUIDSGID", "yes"),
        ("LockPersonality", "yes"),
        ("RestrictNamespaces", "yes"),
        ("SystemCallArchitectures", "native"),
        ("UMask", "0077"),
    ],
)
def test_unit_hardening(unit: Unit, key: str, value: str) -> None:
    assert _one(unit, "Service", key) == value


def test_unit_devices_and_network(unit: Unit) -> None:
    service = unit["Service"]
    assert set(service["DeviceAllow"]) == {
        "char-ttyUSB rw",
        "char-ttyACM rw",
        "char-usb_device rw",
    }
    assert _words(unit, "Service", "RestrictAddressFamilies") == {
        "AF_INET",
        "AF_INET6",
        "AF_UNIX",
        "AF_NETLINK",
    }
    # Hiding /dev or remapping the groups would lock the devices out.
    assert service.get("PrivateDevices", ["no"]) == ["no"]
    assert service.get("PrivateUsers", ["no"]) == ["no"]
    assert service["CapabilityBoundingSet"] == []  # present and emptied
    assert "@system-service" in _words(unit, "Service", "SystemCallFilter")


def _instance_copy(tmp_path: Path) -> Path:
    """The unit as instance war-07, with ExecStart's binary one that exists here."""
    here = Path(sys.executable).parent / "table-controller"
    assert here.exists(), "the project is not installed in this environment"
    text = UNIT.read_text(encoding="utf-8").replace(INSTALLED_BINARY, str(here))
    copy = tmp_path / "table-controller@war-07.service"
    copy.write_text(text, encoding="utf-8")
    return copy


def test_systemd_accepts_every_directive(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (Debian package systemd) is needed to check the unit"
    proc = subprocess.run(
        [analyze, "verify", "--man=no", str(_instance_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # An unknown key or a bad value is only a warning to systemd: none is allowed.
    assert (proc.returncode, proc.stderr) == (0, "")


def test_systemd_security_exposure_is_low(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (Debian package systemd) is needed to check the unit"
    proc = subprocess.run(
        [analyze, "security", "--offline=true", "--no-pager", str(_instance_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", proc.stdout)
    assert found, proc.stdout[-2000:] + proc.stderr
    assert float(found.group(1)) <= MAX_EXPOSURE


def _udev_rules() -> list[dict[str, tuple[str, str]]]:
    """Each rule as {key: (operator, value)}; every token must be KEY OP "VALUE"."""
    token = re.compile(r'\s*([A-Z_]+(?:\{[^}]+\})?)\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*(,|$)')
    rules = []
    for line in UDEV.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        rule: dict[str, tuple[str, str]] = {}
        pos = 0
        while pos < len(line):
            m = token.match(line, pos)
            assert m, f"not udev syntax at {line[pos:]!r}"
            rule[m.group(1)] = (m.group(2), m.group(3))
            pos = m.end()
        rules.append(rule)
    return rules


def test_udev_names_the_shoe_and_console_by_adapter_serial() -> None:
    by_link = {r["SYMLINK"][1]: r for r in _udev_rules() if "SYMLINK" in r}
    assert set(by_link) == {"war-shoe", "war-console"}
    for name, rule in by_link.items():
        assert rule["SYMLINK"][0] == "+="
        assert rule["SUBSYSTEM"] == ("==", "tty")
        for key in ("ATTRS{idVendor}", "ATTRS{idProduct}", "ATTRS{serial}"):
            assert rule[key][0] == "=="
        assert "REPLACE" in rule["ATTRS{serial}"][1], f"{name}: the example serial must say so"
        assert rule["GROUP"] == ("=", "dialout")
        assert rule["MODE"] == ("=", "0660")
    assert by_link["war-shoe"]["ATTRS{serial}"] != by_link["war-console"]["ATTRS{serial}"]


def _board_rule() -> dict[str, tuple[str, str]]:
    boards = [r for r in _udev_rules() if r.get("SUBSYSTEM") == ("==", "usb")]
    assert len(boards) == 1
    return boards[0]


def test_udev_gives_the_sensor_board_to_plugdev() -> None:
    board = _board_rule()
    # Pinned by its serial, as the config's URL is: no other gadget gets the board's rights.
    assert "REPLACE" in board["ATTR{serial}"][1]
    assert board["ATTR{idVendor}"] == ("==", "1209")
    assert board["ATTR{idProduct}"] == ("==", "0001")
    assert board["GROUP"] == ("=", "plugdev")
    assert board["MODE"] == ("=", "0660")


def test_readme_installs_what_the_unit_and_config_name(example: TableConfig) -> None:
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for path in (example.mqtt.ca_file, example.mqtt.password_file):
        assert str(path) in readme, path
    assert f"/etc/table-controller/{example.table.id}.toml" in readme
    assert f"table-controller@{example.table.id}" in readme
    assert f"systemd/{UNIT.name} /etc/systemd/system/" in readme
    assert f"/etc/udev/rules.d/{UDEV.name}" in readme
    assert "/opt/table-controller/.venv" in readme
