"""deploy/mosquitto/site-bridge.conf between two real brokers, each on pit-broker.conf.

A table on the site broker publishes; a recorder on the central broker receives it;
the recorder's ack and replay come back down to the table. Only the listed topics
pass, each in its direction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.deploy.mqtt_clients import MqttClient
from tests.deploy.pit_setup import MOSQUITTO_DIR, PitBroker, PitCa, pit_broker, topic

BRIDGE_CONF = MOSQUITTO_DIR / "site-bridge.conf"
BRIDGE_ACCOUNT = "bridge-main-floor"
ACCEPTED = {0x00, 0x10}


def render_bridge_conf(central: PitBroker) -> str:
    """site-bridge.conf with the central broker's address, CA and secret put in."""
    text = BRIDGE_CONF.read_text(encoding="utf-8")
    replacements = {
        "central-broker.casino.example:8883": f"{central.host}:{central.port}",
        "/etc/mosquitto/certs/central-ca.pem": str(central.ca.ca_file),
        "REPLACE-WITH-THE-BRIDGE-SECRET": central.accounts[BRIDGE_ACCOUNT].password,
    }
    for old, new in replacements.items():
        assert old in text, f"site-bridge.conf no longer has {old}"
        text = text.replace(old, new)
    return "\n" + text


@pytest.fixture(scope="module")
def brokers(pit_ca: PitCa) -> Iterator[tuple[PitBroker, PitBroker]]:
    with (
        pit_broker(
            pit_ca,
            tables={},
            pit_displays={},
            recorders={"rec-c": "main-floor"},
            # A second bridge account to probe its rights with: logging in as the bridge's
            # own would take the running bridge's session.
            bridges={BRIDGE_ACCOUNT: "main-floor", "bridge-probe": "main-floor"},
        ) as central,
        pit_broker(
            pit_ca,
            bridged_in={BRIDGE_ACCOUNT: "main-floor"},
            extra_conf=render_bridge_conf(central),
        ) as site,
    ):
        _wait_for_bridge(site, central)
        yield site, central


def _wait_for_bridge(site: PitBroker, central: PitBroker) -> None:
    """Until the bridge carries messages: a retained status put on the site broker reaches
    the central one once the bridge is up (the bridge's subscription on the site broker
    is handed the retained message), then its clearing does too."""
    probe = _unique("bridge-up")
    with MqttClient(central, "rec-c") as recorder:
        assert recorder.subscribe(topic("war-07")) == [1]
        with MqttClient(site, "war-07") as table:
            assert table.publish(topic("war-07"), probe, retain=True) in ACCEPTED
            assert recorder.next_message().payload == probe
            assert table.publish(topic("war-07"), b"", retain=True) in ACCEPTED
        assert recorder.next_message().payload == b""


def _unique(label: str) -> bytes:
    return f"{label}-{uuid.uuid4().hex}".encode()


def test_a_tables_messages_reach_the_central_recorder(
    brokers: tuple[PitBroker, PitBroker],
) -> None:
    site, central = brokers
    with MqttClient(central, "rec-c") as recorder:
        assert recorder.subscribe("$share/recorders/casino/main-floor/#") == [1]
        sent = []
        with MqttClient(site, "war-07") as table:
            for leaf in ("status", "state", "events", "rounds", "alerts", "stats"):
                payload = _unique(leaf)
                assert table.publish(topic("war-07", leaf), payload) in ACCEPTED
                sent.append((topic("war-07", leaf), payload))
        got = [(m.topic, bytes(m.payload)) for m in (recorder.next_message() for _ in sent)]
        assert got == sent


def test_a_retained_status_is_retained_on_the_central_broker(
    brokers: tuple[PitBroker, PitBroker],
) -> None:
    site, central = brokers
    status = _unique("retained-status")
    with MqttClient(central, "rec-c") as recorder:
        recorder.subscribe(topic("war-08"))
        with MqttClient(site, "war-08") as table:
            assert table.publish(topic("war-08"), status, retain=True) in ACCEPTED
        assert recorder.next_message().payload == status
    # A recorder that subscribes later gets it from the central broker itself.
    with MqttClient(central, "rec-c") as late:
        late.subscribe(topic("war-08"))
        msg = late.next_message()
        assert (msg.payload, msg.retain) == (status, True)
    with MqttClient(site, "war-08") as table:
        assert table.publish(topic("war-08"), b"", retain=True) in ACCEPTED


def test_ack_and_replay_flow_back_to_the_table(brokers: tuple[PitBroker, PitBroker]) -> None:
    site, central = brokers
    ack, replay = _unique("ack"), _unique("replay")
    with MqttClient(site, "war-07") as table:
        assert table.subscribe(topic("war-07", "ack")) == [1]
        assert table.subscribe(topic("war-07", "replay")) == [1]
        with MqttClient(central, "rec-c") as recorder:
            assert recorder.publish(topic("war-07", "ack"), ack, retain=True) in ACCEPTED
            assert recorder.publish(topic("war-07", "replay"), replay) in ACCEPTED
        got = {bytes(table.next_message().payload) for _ in range(2)}
        assert got == {ack, replay}
    # A table that comes back later is handed the retained ack by its own broker: the
    # bridge's site-side rules let it be the source (check_retain_source).
    with MqttClient(site, "war-07") as table:
        assert table.subscribe(topic("war-07", "ack")) == [1]
        assert bytes(table.next_message().payload) == ack
    with MqttClient(central, "rec-c") as recorder:
        assert recorder.publish(topic("war-07", "ack"), b"", retain=True) in ACCEPTED


def test_only_the_listed_topics_cross(brokers: tuple[PitBroker, PitBroker]) -> None:
    """Another site's topics, and a table's topics going down, stay where they are."""
    site, central = brokers
    with MqttClient(central, "rec-c") as recorder:
        recorder.subscribe("casino/main-floor/#")
        with MqttClient(site, "war-09") as east:  # east-wing: not this bridge's site
            assert east.publish(topic("war-09", "events"), _unique("east")) in ACCEPTED
        sentinel = _unique("sentinel")
        with MqttClient(site, "war-07") as table:
            assert table.publish(topic("war-07", "events"), sentinel) in ACCEPTED
        assert recorder.next_message().payload == sentinel


def test_the_central_broker_refuses_the_bridge_what_tables_may_not_do(
    brokers: tuple[PitBroker, PitBroker],
) -> None:
    _, central = brokers
    with MqttClient(central, "bridge-probe") as bridge:
        assert bridge.publish(topic("war-07", "ack"), b"forged") == 0x87
        assert bridge.publish(topic("war-09", "events"), b"other site") == 0x87
        assert bridge.publish(topic("war-07", "status/extra"), b"deeper") == 0x87


def test_the_bridge_is_appended_to_a_config_that_sets_nodelay() -> None:
    """The fragment has no listener of its own; the broker file it joins sets
    set_tcp_nodelay (deploy/README.md says why), so the bridge's socket has it too."""
    conf = (MOSQUITTO_DIR / "pit-broker.conf").read_text(encoding="utf-8")
    assert "\nset_tcp_nodelay true\n" in conf
    assert "\nlistener" not in BRIDGE_CONF.read_text(encoding="utf-8")
