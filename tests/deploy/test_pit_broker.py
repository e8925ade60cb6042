"""The pit broker's security, as shipped in deploy/mosquitto, against the real mosquitto.

Tables publish over TLS and only their own six topics; pit displays read their site
and write nothing; nobody else gets in (each role in full: test_broker_roles.py).
Refusals are seen both by
what a pit display receives and by the MQTT 5 PUBACK reason code (docs/feed.md).

"Nothing arrived" is decided without waiting for a timeout: after the refused
publish, a permitted message (a sentinel) goes to the same subscriber, and
mosquitto delivers to one subscriber in the order it handled the publishes.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.mqtt_clients import NOT_AUTHORIZED, MqttClient, before_sentinel, connack_reason
from tests.deploy.pit_setup import TABLES, PitBroker, PitCa, pit_broker, run_script, topic

# MQTT 5 PUBACK: 0x00 success, 0x10 no matching subscribers (still accepted).
ACCEPTED = {0x00, 0x10}


def _unique(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex}"


@pytest.fixture
def pit_display(pit: PitBroker) -> Iterator[MqttClient]:
    """A pit display subscribed to every table, with retained messages already in."""
    with MqttClient(pit, "pit-1", client_id=_unique("pit-1")) as display:
        assert display.subscribe("casino/#") == [1]
        before_sentinel(pit, display)
        yield display


def test_table_publishes_over_tls_and_pit_display_receives(
    pit: PitBroker, pit_display: MqttClient
) -> None:
    payload = _unique("status").encode()
    with MqttClient(pit, "war-07") as table:
        assert table.publish(topic("war-07"), payload) in ACCEPTED
    msg = pit_display.next_message()
    assert (msg.topic, msg.payload) == (topic("war-07"), payload)


def test_tables_at_two_sites_each_publish_their_own(
    pit: PitBroker, pit_display: MqttClient
) -> None:
    with MqttClient(pit, "pit-e") as east:
        east.subscribe("casino/#")
        sent = {}
        for table_id in ("war-08", "war-09"):
            payload = _unique(table_id).encode()
            with MqttClient(pit, table_id) as table:
                assert table.publish(topic(table_id, "rounds"), payload) in ACCEPTED
            sent[table_id] = (topic(table_id, "rounds"), payload)
        # Each site's display sees its own site's table, and not the other's.
        got = before_sentinel(pit, pit_display)
        assert sent["war-08"] in got
        assert all(p != sent["war-09"][1] for _, p in got)
        msg = east.next_message()
        assert (msg.topic, msg.payload) == sent["war-09"]


@pytest.mark.parametrize(
    "target",
    [
        topic("war-08"),  # another table at the same site
        topic("war-09"),  # another table at another site
        topic("war-08", site="east-wing"),  # another table's id at a site it is not at
        topic("war-07", site="east-wing"),  # its own id at another site
        "casino/main-floor/table/war-07x/status",  # an id that only starts like its own
        "casino/main-floor/status",  # outside any table
        "$SYS/broker/version",
        topic("war-07", "status/extra"),  # deeper than its own leaves
        topic("war-07", "status/extra/levels"),
        topic("war-07", "events/x"),
        "casino/main-floor/table/war-07",  # the bare table level
        topic("war-07", ""),  # an empty last level
        topic("war-07", "ack"),  # the recorders' topics, which it only reads
        topic("war-07", "replay"),
        topic("war-07", "config"),  # a leaf docs/feed.md does not list
    ],
)
@pytest.mark.parametrize("retain", [False, True], ids=["live", "retained"])
def test_table_cannot_publish_outside_its_own_prefix(
    pit: PitBroker, pit_display: MqttClient, target: str, retain: bool
) -> None:
    payload = _unique("intrusion").encode()
    with MqttClient(pit, "war-07") as table:
        assert table.publish(target, payload, retain=retain) == NOT_AUTHORIZED
    assert all(p != payload for _, p in before_sentinel(pit, pit_display))
    if retain:
        # Nor is it kept for a display that connects later.
        with MqttClient(pit, "pit-2", client_id=_unique("late")) as late:
            late.subscribe("casino/#")
            assert all(p != payload for _, p in before_sentinel(pit, late))


@pytest.mark.parametrize(
    "target",
    [
        topic("war-07"),
        topic("war-07", "ack"),
        topic("war-07", "replay"),
        "casino/main-floor/table/pit-2/status",
        "casino/pit",
        "$SYS/x",
    ],
)
def test_pit_display_cannot_publish(pit: PitBroker, pit_display: MqttClient, target: str) -> None:
    payload = _unique("pit-write").encode()
    with MqttClient(pit, "pit-2", client_id=_unique("pit-2-writer")) as writer:
        assert writer.publish(target, payload) == NOT_AUTHORIZED
    assert all(p != payload for _, p in before_sentinel(pit, pit_display))


def test_tables_read_nothing_of_another_table(pit: PitBroker) -> None:
    live, retained = _unique("live").encode(), _unique("retained").encode()
    with MqttClient(pit, "war-07") as table:
        assert table.publish(topic("war-07", "state"), retained, retain=True) in ACCEPTED
        with MqttClient(pit, "war-08") as other:
            # mosquitto 2.0 grants every SUBSCRIBE and checks `read` per message.
            other.subscribe("casino/#")
            other.subscribe(topic("war-07", "#"))
            assert table.publish(topic("war-07", "events"), live) in ACCEPTED
            # Its own PUBACK comes after anything the broker sent it before.
            assert other.publish(topic("war-08", "events"), b"barrier") in ACCEPTED
            assert other.pending() == []
        assert table.publish(topic("war-07", "state"), b"", retain=True) in ACCEPTED


@pytest.mark.parametrize(
    ("username", "password"),
    [
        (None, None),
        ("war-07", "not-the-secret"),
        ("war-07", ""),
        ("war-99", "anything"),
        ("pit-1", None),  # pit-1's name with war-07's secret
    ],
    ids=["anonymous", "wrong-password", "empty-password", "unknown-user", "others-secret"],
)
def test_refused_without_the_right_credentials(
    pit: PitBroker, username: str | None, password: str | None
) -> None:
    if username == "pit-1":
        password = pit.accounts["war-07"].password
    assert connack_reason(pit, username, password) == NOT_AUTHORIZED
    # The same path with the right secret gets in: the refusal was the credentials.
    assert connack_reason(pit, "war-07", pit.accounts["war-07"].password) == 0


def _tls_handshake(pit: PitBroker, context: ssl.SSLContext) -> str:
    with (
        socket.create_connection((pit.host, pit.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=pit.host) as tls,
    ):
        return tls.version() or ""


def test_client_refuses_a_certificate_for_another_host(
    pit: PitBroker, wrong_host_pit: PitBroker
) -> None:
    context = ssl.create_default_context(cafile=str(pit.ca.ca_file))
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        _tls_handshake(wrong_host_pit, context)
    # Same CA, same client settings, the right certificate: accepted, TLS 1.2+.
    assert _tls_handshake(pit, context) in {"TLSv1.2", "TLSv1.3"}


def test_client_refuses_a_broker_its_ca_did_not_sign(pit: PitBroker) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
        _tls_handshake(pit, ssl.create_default_context())


def test_nothing_in_the_clear(pit: PitBroker) -> None:
    # An MQTT 5 CONNECT in plain TCP: the TLS listener never answers with a CONNACK.
    connect = bytes([0x10, 13, 0, 4]) + b"MQTT" + bytes([5, 0x02, 0, 60, 0, 0, 0])
    with socket.create_connection((pit.host, pit.port), timeout=10) as raw:
        raw.sendall(connect)
        try:
            answer = raw.recv(16)
        except ConnectionResetError:
            answer = b""  # mosquitto drops the connection: the TLS handshake failed
    assert not answer.startswith(b"\x20"), answer


def test_removed_table_loses_access_and_its_retained_status(pit_ca: PitCa) -> None:
    """Persistence keeps retained messages over a restart; check_retain_source
    stops serving those of a table taken off the broker."""
    with pit_broker(pit_ca) as fresh:
        kept, dropped = _unique("kept").encode(), _unique("dropped").encode()
        with MqttClient(fresh, "war-07") as table:
            assert table.publish(topic("war-07"), kept, retain=True) in ACCEPTED
        with MqttClient(fresh, "war-09") as table:
            assert table.publish(topic("war-09"), dropped, retain=True) in ACCEPTED
        fresh.broker.stop()
        run_script(
            "provision-table.sh", "--remove", "east-wing", "war-09", env=fresh.files.script_env
        )
        fresh.broker.start()
        assert connack_reason(fresh, "war-09", fresh.accounts["war-09"].password) == NOT_AUTHORIZED
        with MqttClient(fresh, "pit-1") as display:
            display.subscribe("casino/#")
            got = before_sentinel(fresh, display)
        assert (topic("war-07"), kept) in got
        assert all(p != dropped for _, p in got)


def _status(table_id: str) -> bytes:
    """A `table-status/1` payload as docs/feed.md describes it."""
    return json.dumps(
        {
            "schema": "table-status/1",
            "table": table_id,
            "site": TABLES[table_id],
            "ts": "2025-01-01T12:00:00Z",
            "online": True,
            "version": "0.1.0",
            "rules": "ny",
            "decks": 6,
            "positions": 7,
            "devices": {d: {"state": "ok", "detail": None} for d in ("shoe", "sensors", "console")},
            "outbox": {"depth": 0, "oldest_age_s": None},
        }
    ).encode()


def test_pit_view_watches_the_site_through_the_deployed_broker(pit: PitBroker) -> None:
    """deploy/README.md's pit command, with a pit display's account."""
    for table_id in ("war-07", "war-09"):
        with MqttClient(pit, table_id) as table:
            assert table.publish(topic(table_id), _status(table_id), retain=True) in ACCEPTED
    try:
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "table-controller"),
                "pit",
                "--broker",
                pit.url,
                "--site",
                "main-floor",
                "--username",
                "pit-1",
                "--password-file",
                str(pit.accounts["pit-1"].secret_file),
                "--ca-file",
                str(pit.ca.ca_file),
                "--once",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "COLUMNS": "160"},
        )
    finally:
        for table_id in ("war-07", "war-09"):
            with MqttClient(pit, table_id) as table:
                assert table.publish(topic(table_id), b"", retain=True) in ACCEPTED
    assert proc.returncode == 0, proc.stderr
    assert "main-floor/war-07 ONLINE" in proc.stdout
    assert "war-09" not in proc.stdout  # another site's table
