"""The table config: rules profiles chosen and overridden, bad keys named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from table_controller.engine.rules import PROFILES, RulesName
from table_controller.service.config import ConfigError, load_config, parse_config


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
password_file = "/etc/table-controller/mqtt.secret"
topic_prefix = "casino/{site}/table/{table}"

[storage]
path = "/var/lib/table-controller/war-07.sqlite3"
""",
        encoding="utf-8",
    )
    cfg = load_config(path)
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
    """DEVICES.md: a device is reached by its URL alone; a URL no driver serves is a bad
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
