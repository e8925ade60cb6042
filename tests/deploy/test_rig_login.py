"""``scenario run --external`` watching a table deployed as deploy/README.md says: the
pit broker over TLS, with an account of its own (rig.toml ``username``, ``password_file``,
``ca_file``), on the shipped configuration of a real mosquitto."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from table_controller.rigs.errors import RigConfigError, RigUnavailable
from table_controller.rigs.observer import Observer
from table_controller.rigs.scenario.rigfile import load_rig
from tests.deploy.mqtt_clients import MqttClient
from tests.deploy.pit_setup import PitCa, pit_broker, topic

WATCH_TIMEOUT_S = 30.0


def _rig(path: Path, broker: str, **login: object) -> Path:
    lines = [
        "[rig]",
        f'broker = "{broker}"',
        'site = "main-floor"',
        'table = "war-07"',
        'shoe = "/dev/ttyUSB0"',
        'console = "/dev/ttyUSB1"',
        'sensors = "0.0.0.0:7003"',
        *(f'{key} = "{value}"' for key, value in login.items()),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_rig_sees_a_deployed_table_over_tls_with_its_account(
    pit_ca: PitCa, tmp_path: Path
) -> None:
    with pit_broker(pit_ca) as pit:
        account = pit.accounts["pit-1"]
        rig = load_rig(
            _rig(
                tmp_path / "rig.toml",
                pit.url,
                username=account.username,
                password_file=account.secret_file,
                ca_file=pit.ca.ca_file,
            )
        )
        status = json.dumps({"id": str(uuid.uuid4()), "online": True}).encode()

        async def watch() -> None:
            observer = Observer(rig.broker, f"{rig.prefix}/#", login=rig.login())
            await observer.start(WATCH_TIMEOUT_S)
            try:
                with MqttClient(pit, "war-07") as table:
                    assert table.publish(topic("war-07"), status, retain=True) in {0x00, 0x10}
                await observer.wait(lambda o: o.last("status") is not None, WATCH_TIMEOUT_S)
            finally:
                await observer.close()
                with MqttClient(pit, "war-07") as table:
                    table.publish(topic("war-07"), b"", retain=True)

        asyncio.run(watch())


def test_a_rig_secret_is_held_to_a_tables_rules(tmp_path: Path) -> None:
    secret = tmp_path / "rig.secret"
    secret.write_text("s3cret")
    secret.chmod(0o644)
    with pytest.raises(RigConfigError, match=r"rig\.password_file: .*rig\.secret"):
        load_rig(
            _rig(tmp_path / "a.toml", "mqtts://pit:8883", username="pit-1", password_file=secret)
        )
    secret.chmod(0o600)
    with pytest.raises(RigConfigError, match=r"in clear to 192\.0\.2\.2.*\(with rig\.ca_file\)"):
        load_rig(_rig(tmp_path / "b.toml", "mqtt://192.0.2.2", username="p", password_file=secret))
    with pytest.raises(RigConfigError, match="password_file needs username"):
        load_rig(_rig(tmp_path / "c.toml", "mqtts://pit:8883", password_file="rig.secret"))
    relative = load_rig(
        _rig(tmp_path / "d.toml", "mqtts://pit:8883", username="p", password_file="rig.secret")
    )
    assert relative.password_file == secret  # beside the rig file


def test_a_login_the_broker_refuses_is_said_as_a_refusal(pit_ca: PitCa, tmp_path: Path) -> None:
    """A wrong secret, one of a new bench's first mistakes, is the broker's refusal: never
    "no answer in time", which would send the engineer after the network."""
    wrong = tmp_path / "wrong.secret"
    wrong.write_text("not-the-secret")
    wrong.chmod(0o600)
    with pit_broker(pit_ca) as pit:
        rig = load_rig(
            _rig(
                tmp_path / "rig.toml",
                pit.url,
                username="pit-1",
                password_file=wrong,
                ca_file=pit.ca.ca_file,
            )
        )

        async def watch() -> None:
            observer = Observer(rig.broker, f"{rig.prefix}/#", login=rig.login())
            try:
                with pytest.raises(RigUnavailable, match="refused"):
                    await observer.start(WATCH_TIMEOUT_S / 10)
            finally:
                await observer.close()

        asyncio.run(watch())
