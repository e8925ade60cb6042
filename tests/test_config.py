"""The table config: rules profiles chosen and overridden, bad keys named."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_controller.engine.rules import PROFILES, RulesName
from table_controller.service.config import ConfigError, load_config, parse_config


def _secret(path: Path, mode: int = 0o600) -> Path:
    path.write_text("s3cret\n", encoding="utf-8")
    path.chmod(mode)
    return path


def _base(**table: Any) -> dict[str, Any]:
    return {
        "table": {"id": "war-07", "site": "main-floor", **table},
        "devices": {"shoe": "socket://127.0.0.1:7001", "console": "socket://127.0.0.1:7002"},
        "storage": {"path": "/tmp/war-07.sqlite3"},
    }


def test_spec_example_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "table.toml"
    path.write_text(
        """
[table]
id = "war-07"
site = "main-floor"
rules = "ny"
decks = 6
positions = 7
currency = "USD"
limits = { initial = [500, 100000], tie = [100, 10000] }

[devices]
shoe = "/dev/war-shoe"
console = "socket://127.0.0.1:7002"
sensors = "usb://1209:0001"

[mqtt]
url = "mqtt://127.0.0.1:1883"
protocol = "5"
ca_file = "/etc/table-controller/pit-ca.pem"
username = "war-07"
password_file = "mqtt.secret"
topic_prefix = "casino/{site}/table/{table}"

[storage]
path = "/var/lib/table-controller/war-07.sqlite3"
""",
        encoding="utf-8",
    )
    _secret(tmp_path / "mqtt.secret")
    cfg = load_config(path)
    assert cfg.mqtt.password_file == tmp_path / "mqtt.secret"
    assert cfg.rules.name is RulesName.NY
    assert cfg.decks == 6
    assert cfg.table.limits.initial == (500, 100000)
    assert cfg.topic_prefix == "casino/main-floor/table/war-07"


def test_unknown_key_is_named() -> None:
    data = _base()
    data["table"]["colour"] = "green"
    with pytest.raises(ConfigError, match=r"table\.colour"):
        parse_config(data)


def test_bad_value_is_named() -> None:
    with pytest.raises(ConfigError, match=r"table\.positions"):
        parse_config(_base(positions=0))


def test_ny_refuses_decks_outside_six_to_eight() -> None:
    # §5324.22(c): six, seven or eight decks.
    with pytest.raises(ConfigError, match=r"table\.decks: 4 decks not allowed"):
        parse_config(_base(rules="ny", decks=4))
    assert parse_config(_base(rules="uk", decks=4)).decks == 4


def test_ny_refuses_more_than_seven_positions() -> None:
    # §5324.22(a): no more than seven players.
    with pytest.raises(ConfigError, match=r"table\.positions"):
        parse_config(_base(rules="ny", positions=8))
    assert parse_config(_base(rules="uk", positions=9)).table.positions == 9


def test_profile_override_and_bad_override_named() -> None:
    data = _base(rules="uk")
    data["profile"] = {"burn_before_dealer_war": 3}
    cfg = parse_config(data)
    assert cfg.rules.burn_before_dealer_war == 3
    assert cfg.rules.burn_before_war == PROFILES[RulesName.UK].burn_before_war
    data["profile"] = {"burn_before_war": -1}
    with pytest.raises(ConfigError, match=r"profile\.burn_before_war"):
        parse_config(data)
    data["profile"] = {"no_such_field": 1}
    with pytest.raises(ConfigError, match=r"profile\.no_such_field"):
        parse_config(data)


def test_unknown_rules_named() -> None:
    with pytest.raises(ConfigError, match=r"table\.rules"):
        parse_config(_base(rules="vegas"))


def test_table_id_must_be_one_topic_level() -> None:
    with pytest.raises(ConfigError, match=r"table\.id"):
        parse_config(_base(id="war/07"))


def test_device_urls_are_checked_at_start() -> None:
    """docs/devices.md: a device is reached by its URL alone; a URL no driver serves is a bad
    value, named by its key, not a failure once the service runs."""
    data = _base()
    data["devices"]["shoe"] = "bogus://x"
    with pytest.raises(ConfigError, match=r"devices\.shoe: not a serial device or pyserial URL"):
        parse_config(data)
    data = _base()
    data["devices"]["sensors"] = "usb://12zz:0001"
    with pytest.raises(ConfigError, match=r"devices\.sensors"):
        parse_config(data)
    data = _base()
    data["devices"]["sensors"] = "simusb://127.0.0.1:7003"
    data["devices"]["console"] = "/dev/war-console"
    assert parse_config(data).devices.console == "/dev/war-console"


# -- strict types (issue: `positions = true` became 1) --------------------------------


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("table", "positions", True),
        ("table", "positions", 7.0),
        ("table", "decks", 6.0),
        ("table", "decks", "6"),
        ("table", "id", 7),
        ("mqtt", "keepalive_s", "15"),
        ("mqtt", "keepalive_s", 15.0),
        ("mqtt", "allow_plaintext_password", 1),
        ("mqtt", "allow_plaintext_password", "true"),
        ("storage", "keep_days", True),
        ("storage", "keep_days", "30"),
    ],
)
def test_values_of_the_wrong_type_are_refused_by_key(section: str, key: str, value: Any) -> None:
    data = _base()
    data.setdefault(section, {})[key] = value
    with pytest.raises(ConfigError, match=rf"^{section}\.{key}: "):
        parse_config(data)


@pytest.mark.parametrize(
    ("limits", "where"),
    [
        ({"initial": [True, 100000]}, r"initial\.0"),  # not a 1-cent minimum
        ({"initial": [500.0, 100000.0], "tie": [100, 10000]}, r"initial\.0"),
        ({"initial": ["500", "100000"]}, r"initial\.0"),
        ({"tie": [100, False]}, r"tie\.1"),
    ],
    ids=["true-as-cents", "floats", "strings", "false-as-cents"],
)
def test_limits_are_whole_cents_named_by_key(limits: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError, match=rf"^table\.limits\.{where}: Input should be a valid int"):
        parse_config(_base(limits=limits))


def test_limits_and_keep_days_keep_their_valid_forms() -> None:
    data = _base(limits={"initial": [500, 100000], "tie": [100, 10000]})
    data["storage"]["keep_days"] = 0.5  # half a day: a length of time, not a count
    cfg = parse_config(data)
    assert (cfg.table.limits.initial, cfg.table.limits.tie) == ((500, 100000), (100, 10000))
    assert (cfg.storage.keep_days, parse_config(_base()).storage.keep_days) == (0.5, 30)
    with pytest.raises(ConfigError, match=r"^table\.limits\.initial: minimum 900 above"):
        parse_config(_base(limits={"initial": [900, 500]}))


@pytest.mark.parametrize(("key", "value"), [("burn_before_war", True), ("burn_before_war", 3.0)])
def test_profile_overrides_are_not_coerced(key: str, value: Any) -> None:
    data = _base()
    data["profile"] = {key: value}
    with pytest.raises(ConfigError, match=rf"profile\.{key}: .* not a whole number"):
        parse_config(data)


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("mqtts://broker:0", "bad port 0"),
        ("mqtt://broker:0", "bad port 0"),
        ("mqtt://broker:65536", "bad port"),
        ("mqtt://broker/casino", "only a host and a port"),
        ("http://broker", "use mqtt://"),
        ("mqtt://user:pw@broker", "no credentials"),
    ],
)
def test_broker_url_is_checked_by_the_one_parser(url: str, complaint: str) -> None:
    data = _base()
    data["mqtt"] = {"url": url}
    with pytest.raises(ConfigError, match=rf"^mqtt\.url: .*{complaint}"):
        parse_config(data)


# -- the topic prefix (issue: NUL, $SYS, empty levels, attribute lookups) -----------


@pytest.mark.parametrize(
    ("prefix", "complaint"),
    [
        ("casino/{site}/table/{table}\0", "NUL"),
        ("$SYS/{site}/{table}", "must not start with '\\$'"),
        ("$share/g/{table}", "must not start with"),
        ("casino//{table}", "empty topic levels"),
        ("/casino/{table}", "empty topic levels"),
        ("casino/{table}/", "empty topic levels"),
        (
            "casino/{table.__class__.__name__}/{table}",
            r"\{table\.__class__\.__name__\} not allowed",
        ),
        ("casino/{site!r}/{table}", r"\{site!r\} not allowed"),
        ("casino/{table:>20}", "not allowed"),
        ("casino/{0}/{table}", r"\{0\} not allowed"),
        ("casino/{}/{table}", "not allowed"),
        ("casino/{table", "only {site} and {table}"),
        ("casino/{site}", "must contain {table}"),
        ("casino/+/{table}", "no wildcards"),
        ("casino/#/{table}", "no wildcards"),
    ],
)
def test_bad_topic_prefixes_are_refused(prefix: str, complaint: str) -> None:
    data = _base()
    data["mqtt"] = {"topic_prefix": prefix}
    with pytest.raises(ConfigError, match=rf"^mqtt\.topic_prefix: .*{complaint}"):
        parse_config(data)


@given(st.text(alphabet="ab/{}$#+.!:_\0", max_size=30))
def test_an_accepted_prefix_is_a_plain_topic_path(prefix: str) -> None:
    data = _base()
    data["mqtt"] = {"topic_prefix": prefix}
    try:
        cfg = parse_config(data)
    except ConfigError:
        return
    topic = cfg.topic_prefix
    assert "war-07" in topic
    assert not topic.startswith("$")
    assert all(level and not set(level) & set("+#\0{}") for level in topic.split("/"))


# -- passwords in clear ---------------------------------------------------------------


def test_a_password_over_plain_mqtt_to_another_host_is_refused(tmp_path: Path) -> None:
    data = _base()
    data["mqtt"] = {"url": "mqtt://pit-broker.casino.example", "password_file": "x"}
    with pytest.raises(
        ConfigError, match=r"mqtt\.url: a password would go in clear.*allow_plaintext_password"
    ):
        parse_config(data)
    # TLS, or the operator's explicit choice, is taken.
    data["mqtt"]["url"] = "mqtts://pit-broker.casino.example"
    assert parse_config(data).mqtt.url.startswith("mqtts://")
    data["mqtt"] = {
        "url": "mqtt://10.20.0.5",
        "password_file": "x",
        "allow_plaintext_password": True,
    }
    assert parse_config(data).mqtt.allow_plaintext_password


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "10.20.0.5"])
def test_a_password_in_clear_is_logged_even_on_loopback(
    host: str, caplog: pytest.LogCaptureFixture
) -> None:
    data = _base()
    data["mqtt"] = {
        "url": f"mqtt://{host}:1883",
        "password_file": "x",
        "allow_plaintext_password": host == "10.20.0.5",
    }
    with caplog.at_level(logging.WARNING):
        parse_config(data)
    assert any("password goes in clear" in r.getMessage() for r in caplog.records)
    caplog.clear()
    data["mqtt"] = {"url": f"mqtt://{host}:1883"}  # no password: nothing to say
    with caplog.at_level(logging.WARNING):
        parse_config(data)
    assert caplog.records == []


# -- files named by the config (issue 18: relative paths, the config check) ------------


def _write(path: Path, mqtt: str = "", storage: str = "war-07.sqlite3") -> Path:
    path.write_text(
        f"""
[table]
id = "war-07"
site = "main-floor"
[devices]
shoe = "socket://127.0.0.1:7001"
console = "socket://127.0.0.1:7002"
[mqtt]
{mqtt}
[storage]
path = "{storage}"
""",
        encoding="utf-8",
    )
    return path


def test_relative_paths_are_taken_from_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    _secret(folder / "mqtt.secret")
    cfg_file = _write(
        folder / "war-07.toml",
        mqtt='username = "war-07"\npassword_file = "mqtt.secret"',
        storage="data/war-07.sqlite3",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = load_config(Path("..") / "etc" / "war-07.toml")
    assert cfg.storage.path.resolve() == folder / "data" / "war-07.sqlite3"
    assert cfg.mqtt.password_file is not None
    assert cfg.mqtt.password_file.resolve() == folder / "mqtt.secret"
    # An absolute path stays as it is.
    assert load_config(_write(cfg_file, storage="/var/lib/t/w.sqlite3")).storage.path == Path(
        "/var/lib/t/w.sqlite3"
    )


@pytest.mark.parametrize(
    ("setup", "complaint"),
    [
        ("missing", r"mqtt\.password_file: cannot read .*mqtt\.secret: No such file"),
        ("exposed", r"mqtt\.password_file: .*mqtt\.secret is readable by its group"),
    ],
)
def test_the_config_check_fails_on_an_unusable_password_file(
    tmp_path: Path, setup: str, complaint: str
) -> None:
    if setup == "exposed":
        _secret(tmp_path / "mqtt.secret", 0o640)
    cfg_file = _write(
        tmp_path / "war-07.toml", mqtt='username = "war-07"\npassword_file = "mqtt.secret"'
    )
    with pytest.raises(ConfigError, match=complaint) as info:
        load_config(cfg_file)
    assert str(info.value).startswith(f"{cfg_file}: ")


def test_the_config_check_fails_on_a_missing_ca_file(tmp_path: Path) -> None:
    cfg_file = _write(
        tmp_path / "war-07.toml", mqtt='url = "mqtts://broker"\nca_file = "pit-ca.pem"'
    )
    with pytest.raises(ConfigError, match=r"mqtt\.ca_file: .*pit-ca\.pem: no such file"):
        load_config(cfg_file)


def test_run_names_the_missing_password_file(tmp_path: Path) -> None:
    """issue 18: `run` stopped with a message that did not name the secret's file."""
    cfg_file = _write(
        tmp_path / "war-07.toml", mqtt='username = "war-07"\npassword_file = "war-07.secret"'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "table_controller.cli", "run", "--config", str(cfg_file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert f"{cfg_file}: mqtt.password_file: cannot read {tmp_path / 'war-07.secret'}" in (
        proc.stderr
    )
