"""The pit against brokers that ask more of it: mosquitto over TLS with a password, a
certificate from another CA and a wrong password, the demo's MQTT 3.1.1 broker, and
subscriptions the broker refuses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode
from rich.console import Console

from table_controller import cli
from table_controller.pit.client import subscription_refusal, watch
from table_controller.pit.errors import PitConnectError
from table_controller.pit.model import PitModel
from table_controller.pit.views import Link
from table_controller.rigs.broker import MosquittoBroker, free_port
from tests.pit_rig import _Null, _publish, _retained, _secret, _site
from tests.test_pit_payloads import TABLE

# ---------------------------------------------------------------- TLS and a password


@dataclass(frozen=True)
class _TlsBroker:
    broker: MosquittoBroker
    port: int
    ca: Path
    other_ca: Path
    password_file: Path


def _openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True)


def _make_ca(folder: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN={name}",
        cwd=folder,
    )  # fmt: skip


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_TlsBroker]:
    folder = tmp_path_factory.mktemp("pit-tls")
    _make_ca(folder, "ca")
    _make_ca(folder, "other-ca")
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=folder,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext", cwd=folder,
    )  # fmt: skip
    passwords = folder / "broker.passwd"
    subprocess.run(
        ["mosquitto_passwd", "-c", "-b", str(passwords), "pit-1", "s3cret"],
        check=True,
        capture_output=True,
    )
    passwords.chmod(0o600)
    port = free_port()
    config = (
        f"listener {port} 127.0.0.1\n"
        f"cafile {folder / 'ca.crt'}\ncertfile {folder / 'server.crt'}\n"
        f"keyfile {folder / 'server.key'}\n"
        f"allow_anonymous false\npassword_file {passwords}\npersistence false\n"
    )
    if os.geteuid() == 0:
        # Started as root, mosquitto would become the `mosquitto` user, who cannot read
        # this test's private temporary folder.
        config += "user root\n"
    broker = MosquittoBroker(port=port, config_text=config)
    try:
        broker.start()
        yield _TlsBroker(
            broker, port, folder / "ca.crt", folder / "other-ca.crt", _secret(folder / "pit", 0o600)
        )
    finally:
        broker.close()


def _tls_args(tls: _TlsBroker, site: str, ca: Path) -> list[str]:
    return [
        "pit", "--broker", f"mqtts://127.0.0.1:{tls.port}", "--site", site, "--once",
        "--ca-file", str(ca), "--username", "pit-1", "--password-file", str(tls.password_file),
    ]  # fmt: skip


def test_once_over_tls_with_a_password(
    tls_broker: _TlsBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _site()
    context = ssl.create_default_context(cafile=str(tls_broker.ca))
    asyncio.run(
        _publish(
            tls_broker.broker,
            _retained(site),
            port=tls_broker.port,
            tls=context,
            username="pit-1",
            password="s3cret",
        )
    )
    assert cli.main(_tls_args(tls_broker, site, tls_broker.ca)) == 0
    out = capsys.readouterr().out
    assert f"{site}/{TABLE}" in out
    assert "ONLINE" in out


def test_a_broker_certificate_from_another_ca_is_refused(
    tls_broker: _TlsBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(_tls_args(tls_broker, _site(), tls_broker.other_ca)) == 1
    assert "certificate verify failed" in capsys.readouterr().err


def test_a_wrong_password_is_refused(
    tls_broker: _TlsBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _tls_args(tls_broker, _site(), tls_broker.ca)
    wrong = tmp_path / "wrong"
    wrong.write_text("nope\n")
    wrong.chmod(0o600)
    args[args.index(str(tls_broker.password_file))] = str(wrong)
    assert cli.main(args) == 1
    assert "authoriz" in capsys.readouterr().err.lower()


# ---------------------------------------------------------------- MQTT 3.1.1 and refusals


@contextlib.asynccontextmanager
async def _amqtt_broker() -> AsyncIterator[int]:
    """The demo's embedded broker (amqtt), which speaks MQTT 3.1.1 only (docs/feed.md)."""
    from amqtt.broker import Broker

    port = free_port()
    broker = Broker(
        {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
    )
    await broker.start()
    try:
        yield port
    finally:
        await broker.shutdown()


async def test_a_pit_on_the_demo_broker_speaks_3_1_1() -> None:
    site = _site()
    async with _amqtt_broker() as port:
        async with aiomqtt.Client("127.0.0.1", port) as table:  # 3.1.1, like the demo's
            for name, payload, retain in _retained(site):
                await table.publish(name, payload, qos=1, retain=retain)
        url = f"mqtt://127.0.0.1:{port}"
        console = Console(record=True, width=160, file=_Null())
        with pytest.raises(PitConnectError, match="Unsupported protocol version"):
            await watch(url, site, once=True, console=console)
        model = PitModel(site=site)
        await watch(url, site, once=True, console=console, protocol="3.1.1", model=model)
    view = model.table(TABLE)
    assert view is not None
    assert view.link is Link.ONLINE
    assert f"{site}/{TABLE} ONLINE" in console.export_text()


@pytest.mark.parametrize(
    ("granted", "refused"),
    [
        ([ReasonCode(PacketTypes.SUBACK, identifier=1)], None),
        ([ReasonCode(PacketTypes.SUBACK, identifier=0x87)], "Not authorized (0x87)"),
        ([ReasonCode(PacketTypes.SUBACK, identifier=0x80)], "Unspecified error (0x80)"),
        ([0, 1], None),
        ([1, 128], "0x80"),
    ],
    ids=["granted", "not-authorized", "unspecified", "v311-granted", "v311-failure"],
)
def test_a_refused_subscription_is_named(
    granted: list[ReasonCode | int], refused: str | None
) -> None:
    assert subscription_refusal(granted) == refused
