"""The [mqtt] settings as the publisher reads them: broker URL, password file, TLS; and
TLS with a verified broker certificate and a password against a real Mosquitto."""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_controller.feed.broker import (
    BrokerAddress,
    BrokerConfigError,
    parse_broker_url,
    read_password,
    tls_context,
)
from table_controller.rigs.broker import MosquittoBroker, free_port
from table_controller.service.config import MqttSection
from table_controller.service.journal import Journal
from table_controller.service.publisher import Publisher, PublisherConfigError
from tests.publisher_rig import ENV, event_message, running_table, status_model, watching

# -- the broker URL ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("mqtt://broker", BrokerAddress("broker", 1883, tls=False)),
        ("mqtts://broker", BrokerAddress("broker", 8883, tls=True)),
        (
            "mqtts://pit-broker.casino.internal:9883",
            BrokerAddress("pit-broker.casino.internal", 9883, tls=True),
        ),
        ("mqtt://127.0.0.1:1884/", BrokerAddress("127.0.0.1", 1884, tls=False)),
        ("mqtt://[::1]:1884", BrokerAddress("::1", 1884, tls=False)),
    ],
)
def test_broker_urls(url: str, address: BrokerAddress) -> None:
    assert parse_broker_url(url) == address


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("ws://broker", "mqtt:// or mqtts://"),
        ("mqtt://war-07:secret@broker", "no credentials in the URL"),
        ("mqtt://broker/casino", "only a host and a port"),
        ("mqtt://broker:99999", "bad port"),
        ("mqtt://:1883", "no host"),
    ],
)
def test_bad_broker_urls_say_what_is_wrong(url: str, complaint: str) -> None:
    with pytest.raises(BrokerConfigError, match=complaint):
        parse_broker_url(url)


# -- the password file ------------------------------------------------------------------


def test_the_password_is_read_from_a_private_file(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt.secret"
    secret.write_text("s3cret pass\n", encoding="utf-8")
    for mode in (0o600, 0o400):
        secret.chmod(mode)
        assert read_password(secret) == "s3cret pass"


# The list (0640, 0660, 0602, 0622 were taken) and the world-readable ones.
@pytest.mark.parametrize("mode", [0o640, 0o660, 0o602, 0o622, 0o610, 0o644, 0o604, 0o777])
def test_a_password_file_open_to_group_or_others_is_refused_by_name(
    tmp_path: Path, mode: int
) -> None:
    secret = tmp_path / "mqtt.secret"
    secret.write_text("s3cret\n", encoding="utf-8")
    secret.chmod(mode)
    with pytest.raises(
        BrokerConfigError,
        match=r"mqtt\.secret is (readable|writable|executable) by (others|its group)",
    ):
        read_password(secret)
    with pytest.raises(BrokerConfigError, match=rf"mode {mode:04o}.*chmod 600 {secret}"):
        read_password(secret)


def test_a_password_file_of_another_owner_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt.secret"
    secret.write_text("s3cret\n", encoding="utf-8")
    secret.chmod(0o600)
    nobody = pwd.getpwnam("nobody")
    # Root can give the file away; another user cannot, and then its own files are the test.
    assert os.geteuid() == 0, "run as root (the CI does) to hand a file to another owner"
    os.chown(secret, nobody.pw_uid, -1)
    with pytest.raises(
        BrokerConfigError, match=rf"{secret} belongs to nobody.*chown root {secret}"
    ):
        read_password(secret)


def test_a_symlinked_password_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.secret"
    real.write_text("s3cret\n", encoding="utf-8")
    real.chmod(0o600)
    link = tmp_path / "mqtt.secret"
    link.symlink_to(real)
    with pytest.raises(BrokerConfigError, match=rf"{link} is a symbolic link.*{real}"):
        read_password(link)
    assert read_password(real) == "s3cret"


def test_other_password_file_problems_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(BrokerConfigError, match=r"missing\.secret"):
        read_password(tmp_path / "missing.secret")
    empty = tmp_path / "empty.secret"
    empty.write_text("\n", encoding="utf-8")
    empty.chmod(0o600)
    with pytest.raises(BrokerConfigError, match=r"empty\.secret is empty"):
        read_password(empty)
    with pytest.raises(BrokerConfigError, match="not a regular file"):
        read_password(tmp_path)


def test_the_publisher_refuses_a_readable_secret_at_start(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt.secret"
    secret.write_text("s3cret\n", encoding="utf-8")
    secret.chmod(0o644)
    with (
        Journal(tmp_path / "j.sqlite3") as journal,
        pytest.raises(PublisherConfigError, match=r"mqtt\.secret"),
    ):
        Publisher(
            MqttSection(url="mqtt://127.0.0.1:1883", username="war-07", password_file=secret),
            client_id="war-07",
            journal=journal,
            will=lambda: ENV.last_will(status_model(), ts=status_model().ts),
        )


# -- TLS --------------------------------------------------------------------------------


def test_the_tls_context_verifies_the_broker_and_its_name(tmp_path: Path) -> None:
    context = tls_context(None)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    with pytest.raises(BrokerConfigError, match=r"mqtt\.ca_file: .*pit-ca\.pem: no such file"):
        tls_context(tmp_path / "pit-ca.pem")
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n", encoding="utf-8")
    with pytest.raises(BrokerConfigError, match=r"junk\.pem"):
        tls_context(junk)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test CA, a broker certificate for ``localhost`` and an unrelated CA."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "openssl is needed (the CI installs it)"
    d = tmp_path_factory.mktemp("pki")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=d, check=True, capture_output=True)

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    for ca in ("ca", "other-ca"):
        run(
            "req",
            "-x509",
            *ec,
            "-keyout",
            f"{ca}.key",
            "-out",
            f"{ca}.crt",
            "-days",
            "2",
            "-subj",
            f"/CN={ca}",
        )
    run("req", *ec, "-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=localhost")
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost\n", encoding="utf-8")
    run(
        "x509", "-req", "-in", "broker.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "broker.crt", "-days", "2", "-extfile", "ext.cnf",
    )  # fmt: skip
    return d


@contextlib.contextmanager
def tls_broker(pki: Path, tmp_path: Path) -> Iterator[MosquittoBroker]:
    passwd = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    passwords = tmp_path / "passwords"
    subprocess.run(
        [passwd, "-b", "-c", str(passwords), "war-07", "s3cret"], check=True, capture_output=True
    )
    port = free_port()
    config = (
        f"listener {port} 127.0.0.1\n"
        # Mosquitto started as root reads these after dropping to its own user,
        # which cannot enter pytest's private folders: stay root (no effect otherwise).
        "user root\n"
        f"cafile {pki / 'ca.crt'}\ncertfile {pki / 'broker.crt'}\nkeyfile {pki / 'broker.key'}\n"
        f"allow_anonymous false\npassword_file {passwords}\npersistence false\n"
    )
    with MosquittoBroker(port, config_text=config) as broker:
        yield broker


def _secret(tmp_path: Path, text: str) -> Path:
    secret = tmp_path / "mqtt.secret"
    secret.write_text(text + "\n", encoding="utf-8")
    secret.chmod(0o600)
    return secret


async def test_mqtts_with_a_verified_broker_and_a_password(pki: Path, tmp_path: Path) -> None:
    with tls_broker(pki, tmp_path) as broker:
        async with running_table(
            tmp_path / "j.sqlite3",
            f"mqtts://localhost:{broker.port}",
            ca_file=pki / "ca.crt",
            username="war-07",
            password_file=_secret(tmp_path, "s3cret"),
        ) as table:
            await table.wait_connected()
            table.publish(event_message(1))
            await table.drained()
            assert table.journal.outbox_depth() == 0


@pytest.mark.parametrize(
    ("host", "ca", "password", "complaint"),
    [
        ("127.0.0.1", "ca.crt", "s3cret", "IP address mismatch"),
        ("localhost", "other-ca.crt", "s3cret", "certificate verify failed"),
        ("localhost", "ca.crt", "wrong", "Not authorized"),
    ],
    ids=["name-not-in-certificate", "unknown-ca", "wrong-password"],
)
async def test_mqtts_refuses_what_it_cannot_trust(
    pki: Path, tmp_path: Path, host: str, ca: str, password: str, complaint: str
) -> None:
    with tls_broker(pki, tmp_path) as broker, watching() as log:
        async with running_table(
            tmp_path / "j.sqlite3",
            f"mqtts://{host}:{broker.port}",
            ca_file=pki / ca,
            username="war-07",
            password_file=_secret(tmp_path, password),
        ) as table:
            await log.wait(logging.WARNING, "cannot connect to the broker")
            assert not table.connected.is_set()
    [warning] = log.matching(logging.WARNING, "cannot connect to the broker")
    assert complaint in warning.getMessage()


# -- the one URL parser, for any input ------------------------------------------------


@given(
    st.one_of(
        st.text(max_size=40),
        st.builds(
            lambda scheme, host, port: f"{scheme}://{host}{port}",
            st.sampled_from(["mqtt", "mqtts", "http", "MQTT", ""]),
            st.text(alphabet="ab.-:[]@/?#1", max_size=12),
            st.one_of(st.just(""), st.integers(-5, 70000).map(lambda p: f":{p}")),
        ),
    )
)
def test_a_broker_url_is_an_address_or_a_named_error(url: str) -> None:
    try:
        address = parse_broker_url(url, key="--broker")
    except BrokerConfigError as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        assert message.startswith("--broker: ")
        return
    assert 1 <= address.port <= 65535
    assert address.host
    assert address.tls == url.startswith("mqtts://")
