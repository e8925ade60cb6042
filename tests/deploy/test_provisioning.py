"""The pit broker's provisioning scripts and the test CA script, on their own files.

What the accounts may do on a running broker is in test_pit_broker.py; here:
the files the scripts leave behind, running them twice, and what they refuse.
"""

from __future__ import annotations

import grp
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.deploy.pit_setup import MOSQUITTO_DIR, ScriptError, run_script

SCRIPTS = sorted(MOSQUITTO_DIR.glob("*.sh"))
SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")  # 32 random bytes, URL-safe base64


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PIT_BROKER_PASSWD": str(tmp_path / "pit-broker.passwd"),
        "PIT_BROKER_ACL": str(tmp_path / "pit-broker.acl"),
    }


def _acl(tmp_path: Path) -> str:
    return (tmp_path / "pit-broker.acl").read_text(encoding="utf-8")


def _users(tmp_path: Path) -> list[str]:
    lines = (tmp_path / "pit-broker.passwd").read_text(encoding="utf-8").splitlines()
    return [line.split(":", 1)[0] for line in lines if line]


def _rules(acl: str) -> list[str]:
    """The lines mosquitto acts on: neither blank nor comments."""
    return [line for line in acl.splitlines() if line.strip() and not line.startswith("#")]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_parse_and_run_strict(script: Path) -> None:
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    text = script.read_text(encoding="utf-8")
    if script.name == "provision-lib.sh":
        return  # sourced by the two provisioning scripts, which set the options
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "\nset -euo pipefail\n" in text
    assert os.access(script, os.X_OK), f"{script.name} is not executable"


def test_shipped_acl_template_grants_nothing() -> None:
    # Rules before the first `user` line would apply to clients without a username.
    assert _rules((MOSQUITTO_DIR / "pit-broker.acl").read_text(encoding="utf-8")) == []


def _table_rules(site: str, table: str) -> list[str]:
    """docs/feed.md: the six leaves written (status also read back), ack and replay read."""
    base = f"casino/{site}/table/{table}"
    return [
        f"topic readwrite {base}/status",
        *(
            f"topic write {base}/{leaf}"
            for leaf in ("state", "events", "rounds", "alerts", "stats")
        ),
        f"topic read {base}/ack",
        f"topic read {base}/replay",
    ]


def test_table_pit_recorder_and_bridge_accounts(tmp_path: Path) -> None:
    env = _env(tmp_path)
    run_script(
        "provision-table.sh", "main-floor", "war-07", str(tmp_path / "war-07.secret"), env=env
    )
    run_script("provision-pit.sh", "main-floor", "pit-1", str(tmp_path / "pit-1.secret"), env=env)
    run_script(
        "provision-recorder.sh", "main-floor", "rec-1", str(tmp_path / "rec-1.secret"), env=env
    )
    run_script("provision-bridge.sh", "main-floor", "br-1", str(tmp_path / "br-1.secret"), env=env)
    site = "casino/main-floor/table/+"
    assert _rules(_acl(tmp_path)) == [
        "user war-07",
        *_table_rules("main-floor", "war-07"),
        "user pit-1",
        "topic read casino/main-floor/#",
        "user rec-1",
        "topic read casino/main-floor/#",
        f"topic write {site}/ack",
        f"topic write {site}/replay",
        "user br-1",
        *(
            f"topic write {site}/{leaf}"
            for leaf in ("status", "state", "events", "rounds", "alerts", "stats")
        ),
        f"topic read {site}/ack",
        f"topic read {site}/replay",
    ]
    assert _users(tmp_path) == ["war-07", "pit-1", "rec-1", "br-1"]
    for name in ("war-07", "pit-1", "rec-1", "br-1"):
        secret_file = tmp_path / f"{name}.secret"
        assert SECRET_RE.match(secret_file.read_text(encoding="utf-8"))
        assert _mode(secret_file) == 0o600
    for broker_file in ("pit-broker.passwd", "pit-broker.acl"):
        path = tmp_path / broker_file
        assert _mode(path) == 0o640
        if os.geteuid() == 0:
            assert path.stat().st_gid == grp.getgrnam("mosquitto").gr_gid
    # The password is hashed (PBKDF2-SHA512), never stored as given.
    secret = (tmp_path / "war-07.secret").read_text(encoding="utf-8")
    passwd = (tmp_path / "pit-broker.passwd").read_text(encoding="utf-8")
    assert secret not in passwd
    assert re.search(r"^war-07:\$7\$", passwd, re.MULTILINE)


def test_running_again_changes_nothing_and_rotate_changes_the_secret(tmp_path: Path) -> None:
    env, secret_file = _env(tmp_path), tmp_path / "war-07.secret"
    args = ("main-floor", "war-07", str(secret_file))
    run_script("provision-table.sh", *args, env=env)
    acl, secret = _acl(tmp_path), secret_file.read_text(encoding="utf-8")
    run_script("provision-table.sh", *args, env=env)
    assert (_acl(tmp_path), secret_file.read_text(encoding="utf-8")) == (acl, secret)
    assert _users(tmp_path) == ["war-07"]
    run_script("provision-table.sh", "--rotate", *args, env=env)
    assert _acl(tmp_path) == acl
    rotated = secret_file.read_text(encoding="utf-8")
    assert SECRET_RE.match(rotated)
    assert rotated != secret


def test_without_a_file_the_secret_goes_to_stdout(tmp_path: Path) -> None:
    first = run_script("provision-table.sh", "main-floor", "war-07", env=_env(tmp_path))
    second = run_script("provision-table.sh", "main-floor", "war-07", env=_env(tmp_path))
    lines = [first.stdout.splitlines(), second.stdout.splitlines()]
    assert all(len(out) == 1 and SECRET_RE.match(out[0]) for out in lines)
    assert lines[0] != lines[1]  # nothing to keep it in: each run makes a new one


def test_moving_a_table_to_another_site_replaces_its_rule(tmp_path: Path) -> None:
    env = _env(tmp_path)
    run_script("provision-table.sh", "main-floor", "war-07", env=env)
    run_script("provision-table.sh", "main-floor", "war-08", env=env)
    run_script("provision-table.sh", "east-wing", "war-07", env=env)
    assert _rules(_acl(tmp_path)) == [
        "user war-08",
        *_table_rules("main-floor", "war-08"),
        "user war-07",
        *_table_rules("east-wing", "war-07"),
    ]


def test_a_bridges_site_side_rules_are_rules_and_no_login(tmp_path: Path) -> None:
    """On the site broker, the bridge's remote_username may be the source of the ack and
    replay it brings down, and nothing else; it has no password, so it is no login."""
    env = _env(tmp_path)
    run_script("provision-pit.sh", "main-floor", "pit-1", env=env)
    run_script("provision-bridge.sh", "--site-side", "main-floor", "br-1", env=env)
    run_script("provision-bridge.sh", "--site-side", "main-floor", "br-1", env=env)  # again
    site = "casino/main-floor/table/+"
    assert _rules(_acl(tmp_path)) == [
        "user pit-1",
        "topic read casino/main-floor/#",
        "user br-1",
        f"topic write {site}/ack",
        f"topic write {site}/replay",
    ]
    assert _users(tmp_path) == ["pit-1"]
    taken = run_script(
        "provision-bridge.sh", "--site-side", "main-floor", "pit-1", env=env, check=False
    )
    assert taken.returncode != 0
    assert "already a pit account" in taken.stderr
    run_script("provision-bridge.sh", "--site-side", "--remove", "main-floor", "br-1", env=env)
    assert _rules(_acl(tmp_path)) == ["user pit-1", "topic read casino/main-floor/#"]


def test_remove(tmp_path: Path) -> None:
    env = _env(tmp_path)
    run_script("provision-table.sh", "main-floor", "war-07", env=env)
    run_script("provision-pit.sh", "main-floor", "pit-1", env=env)
    run_script("provision-table.sh", "--remove", "main-floor", "war-07", env=env)
    assert _rules(_acl(tmp_path)) == ["user pit-1", "topic read casino/main-floor/#"]
    assert _users(tmp_path) == ["pit-1"]
    # Removing what is not there is no error: the state asked for is reached.
    run_script("provision-table.sh", "--remove", "main-floor", "war-07", env=env)


@pytest.mark.parametrize(
    "bad",
    ["war/07", "war+", "#", "war 07", "", "-war", ".war", "w" * 65, "war-07\nuser x"],
    ids=[
        "slash",
        "plus",
        "hash",
        "space",
        "empty",
        "dash-first",
        "dot-first",
        "too-long",
        "newline",
    ],
)
def test_names_that_are_not_one_topic_level_are_refused(tmp_path: Path, bad: str) -> None:
    env = _env(tmp_path)
    # `--` ends the options, so that "-war" reaches the name check.
    for script, args in (
        ("provision-table.sh", ("--", "main-floor", bad)),
        ("provision-table.sh", ("--", bad, "war-07")),
        ("provision-pit.sh", ("--", "main-floor", bad)),
        ("provision-pit.sh", ("--", bad, "pit-1")),
        ("provision-recorder.sh", ("--", "main-floor", bad)),
        ("provision-bridge.sh", ("--", bad, "br-1")),
    ):
        proc = run_script(script, *args, env=env, check=False)
        assert proc.returncode == 1, proc.stderr
        assert "must be 1-64 letters" in proc.stderr
    assert not (tmp_path / "pit-broker.acl").exists()
    assert not (tmp_path / "pit-broker.passwd").exists()


def test_an_account_keeps_its_kind(tmp_path: Path) -> None:
    # A pit display turned into a table (or back) would gain or lose rights silently.
    env = _env(tmp_path)
    run_script("provision-table.sh", "main-floor", "war-07", env=env)
    run_script("provision-pit.sh", "main-floor", "pit-1", env=env)
    before = _acl(tmp_path)
    for script, args in (
        ("provision-pit.sh", ("main-floor", "war-07")),
        ("provision-recorder.sh", ("main-floor", "pit-1")),
        ("provision-table.sh", ("s", "pit-1")),
    ):
        proc = run_script(script, *args, env=env, check=False)
        assert proc.returncode == 1
        assert "already a" in proc.stderr
    assert _acl(tmp_path) == before


def test_usage_errors(tmp_path: Path) -> None:
    for script, args in (
        ("provision-table.sh", ()),
        ("provision-table.sh", ("only-site",)),
        ("provision-table.sh", ("a", "b", "c", "d")),
        ("provision-pit.sh", ()),
        ("provision-pit.sh", ("pit-1",)),
        ("provision-pit.sh", ("--bogus", "main-floor", "pit-1")),
        ("provision-recorder.sh", ("main-floor",)),
        ("provision-bridge.sh", ("a", "b", "c", "d")),
        ("make-test-ca.sh", ()),
    ):
        proc = run_script(script, *args, env=_env(tmp_path), check=False)
        assert proc.returncode == 2, (script, args)
        assert "usage:" in proc.stderr


def _openssl(*args: str) -> str:
    return subprocess.run(
        ["openssl", *args], check=True, capture_output=True, text=True, timeout=30
    ).stdout


def _alt_names(cert: Path) -> set[str]:
    text = _openssl("x509", "-in", str(cert), "-noout", "-ext", "subjectAltName")
    names = text.splitlines()[-1].strip().split(", ")
    return {n.replace("IP Address:", "IP:") for n in names}


def test_test_ca_issues_the_named_certificates_and_keeps_its_ca(tmp_path: Path) -> None:
    out = tmp_path / "ca"
    run_script("make-test-ca.sh", str(out), "pit-broker.example", "10.1.2.3")
    assert _alt_names(out / "server.pem") == {
        "DNS:pit-broker.example",
        "IP:10.1.2.3",
        "DNS:localhost",
        "IP:127.0.0.1",
    }
    assert _alt_names(out / "wrong-host.pem") == {"DNS:wrong-host.invalid"}
    for cert in ("server.pem", "wrong-host.pem"):
        # -x509_strict: what Python's ssl will demand by default from 3.13 on.
        _openssl("verify", "-x509_strict", "-CAfile", str(out / "ca.pem"), str(out / cert))
    for key in ("ca.key", "server.key", "wrong-host.key"):
        assert _mode(out / key) == 0o600
    ca_before = (out / "ca.pem").read_bytes()
    server_before = (out / "server.pem").read_bytes()
    run_script("make-test-ca.sh", str(out))
    assert (out / "ca.pem").read_bytes() == ca_before
    assert (out / "server.pem").read_bytes() != server_before
    assert _alt_names(out / "server.pem") == {"DNS:localhost", "IP:127.0.0.1"}
    _openssl("verify", "-x509_strict", "-CAfile", str(out / "ca.pem"), str(out / "server.pem"))


def test_script_failure_is_reported_with_its_output(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="must be 1-64 letters"):
        run_script("provision-pit.sh", "main-floor", "a/b", env=_env(tmp_path))


def _conf_value(directive: str) -> str:
    for line in (MOSQUITTO_DIR / "pit-broker.conf").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words and words[0] == directive:
            return words[1]
    raise AssertionError(f"pit-broker.conf has no {directive}")


def test_scripts_default_to_the_files_the_broker_reads() -> None:
    lib = (MOSQUITTO_DIR / "provision-lib.sh").read_text(encoding="utf-8")
    defaults = dict(re.findall(r"\$\{(PIT_BROKER_\w+):-([^}]+)\}", lib))
    assert defaults == {
        "PIT_BROKER_PASSWD": _conf_value("password_file"),
        "PIT_BROKER_ACL": _conf_value("acl_file"),
    }


def test_readme_installs_the_files_where_they_are_read() -> None:
    readme = (MOSQUITTO_DIR.parent / "README.md").read_text(encoding="utf-8")
    for directive in ("certfile", "keyfile"):
        assert _conf_value(directive) in readme, directive
    assert "/etc/mosquitto/mosquitto.conf" in readme
    for script in SCRIPTS:
        assert script.name in readme, script.name
