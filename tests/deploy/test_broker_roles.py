"""The three roles of docs/feed.md ("Who may do what on the broker") on the shipped broker.

A table writes its own six leaves and reads its own ack and replay; a pit display
reads its site and writes nothing; a recorder reads its site and writes only ack and
replay of its site's tables. No account can take another's session: the client id
is the username. "Nothing arrived" is decided by a sentinel, as in
test_pit_broker.py: mosquitto delivers to one subscriber in the order it handled
the publishes.
"""

from __future__ import annotations

import uuid

import pytest

from tests.deploy.mqtt_clients import NOT_AUTHORIZED, MqttClient, before_sentinel
from tests.deploy.pit_setup import PitBroker, topic

ACCEPTED = {0x00, 0x10}
LEAVES = ("status", "state", "events", "rounds", "alerts", "stats")


def _unique(label: str) -> bytes:
    return f"{label}-{uuid.uuid4().hex}".encode()


# -- session takeover (issue: any account could knock a table off the pit) ------------


@pytest.mark.parametrize("intruder", ["war-08", "pit-2", "rec-1"])
def test_another_account_cannot_take_a_tables_session(pit: PitBroker, intruder: str) -> None:
    offline = _unique("war-07-offline")
    with MqttClient(pit, "pit-1") as display:
        assert display.subscribe(topic("war-07")) == [1]
        with MqttClient(
            pit, "war-07", client_id="war-07", will=(topic("war-07"), offline)
        ) as table:
            # Asking for war-07's client id gets the intruder its own (its username).
            with MqttClient(pit, intruder, client_id="war-07") as other:
                assert other.subscribe(topic("war-07", "ack")) in ([1], [0x87])
            live = _unique("still-online")
            assert table.publish(topic("war-07"), live, retain=True) in ACCEPTED
            assert table.disconnects == 0
            # The will was not published: the table never left, the display saw only it.
            assert display.next_message().payload == live
            assert table.publish(topic("war-07"), b"", retain=True) in ACCEPTED


def test_a_second_connection_of_the_same_account_takes_the_session(pit: PitBroker) -> None:
    """The other side of the rule: why each pit window needs its own account."""
    with MqttClient(pit, "pit-2") as first:
        assert first.subscribe(topic("war-07")) == [1]
        with MqttClient(pit, "pit-2", client_id="another-window"):
            pass
        first.wait_disconnected()


# -- tables ---------------------------------------------------------------------------


@pytest.mark.parametrize("leaf", LEAVES)
def test_a_table_writes_each_of_its_six_leaves(pit: PitBroker, leaf: str) -> None:
    payload = _unique(leaf)
    with MqttClient(pit, "pit-1") as display:
        display.subscribe(topic("war-07", leaf))
        with MqttClient(pit, "war-07") as table:
            assert table.publish(topic("war-07", leaf), payload) in ACCEPTED
        assert display.next_message().payload == payload


def test_a_table_reads_only_its_own_ack_replay_and_status(pit: PitBroker) -> None:
    with MqttClient(pit, "war-07") as table:
        table.subscribe("casino/#")
        sent = {}
        with MqttClient(pit, "rec-1") as recorder:
            for leaf in ("ack", "replay"):
                for table_id in ("war-07", "war-08"):
                    sent[(table_id, leaf)] = _unique(f"{table_id}-{leaf}")
                    assert (
                        recorder.publish(topic(table_id, leaf), sent[(table_id, leaf)]) in ACCEPTED
                    )
        own_status = _unique("own-status")
        assert table.publish(topic("war-07"), own_status) in ACCEPTED
        seen = {bytes(table.next_message().payload) for _ in range(3)}
        assert seen == {sent[("war-07", "ack")], sent[("war-07", "replay")], own_status}
        # Its own events, another table's ack and status: never delivered to it.
        assert table.publish(topic("war-07", "events"), _unique("own-event")) in ACCEPTED
        assert table.publish(topic("war-07", "status"), b"barrier") in ACCEPTED
        assert table.next_message().payload == b"barrier"


# -- pit displays ---------------------------------------------------------------------


def test_a_pit_display_reads_its_site_only(pit: PitBroker) -> None:
    with MqttClient(pit, "pit-1") as display:
        display.subscribe("casino/#")
        own, other = _unique("main"), _unique("east")
        with MqttClient(pit, "war-07") as table:
            assert table.publish(topic("war-07", "events"), own) in ACCEPTED
        with MqttClient(pit, "war-09") as table:
            assert table.publish(topic("war-09", "events"), other) in ACCEPTED
        with MqttClient(pit, "rec-1") as recorder:
            ack = _unique("ack")
            assert recorder.publish(topic("war-07", "ack"), ack) in ACCEPTED
        got = [p for _, p in before_sentinel(pit, display, "war-08")]
        assert got == [own, ack]


# -- recorders ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "allowed"),
    [
        (topic("war-07", "ack"), True),
        (topic("war-08", "replay"), True),
        (topic("war-09", "ack"), False),  # another site's table
        (topic("war-07", "ack/extra"), False),
        (topic("war-07", "status"), False),  # the table's own topics
        (topic("war-07", "events"), False),
        (topic("war-07", "rounds"), False),
        ("casino/main-floor/table/war-07", False),
        ("casino/main-floor/recorders", False),
        ("$SYS/broker/x", False),
    ],
)
def test_a_recorder_writes_only_ack_and_replay_of_its_sites_tables(
    pit: PitBroker, target: str, allowed: bool
) -> None:
    with MqttClient(pit, "rec-1") as recorder:
        code = recorder.publish(target, _unique("rec"))
    assert (code in ACCEPTED) if allowed else code == NOT_AUTHORIZED


def test_a_recorder_reads_its_site_in_a_shared_group(pit: PitBroker) -> None:
    with MqttClient(pit, "rec-1") as recorder:
        assert recorder.subscribe("$share/recorders/casino/main-floor/#") == [1]
        assert recorder.subscribe("casino/east-wing/#") == [1]
        own, other = _unique("main"), _unique("east")
        with MqttClient(pit, "war-09") as table:
            assert table.publish(topic("war-09", "rounds"), other) in ACCEPTED
        with MqttClient(pit, "war-07") as table:
            assert table.publish(topic("war-07", "rounds"), own) in ACCEPTED
        assert recorder.next_message().payload == own


def test_the_broker_listens_only_where_it_is_told(pit: PitBroker) -> None:
    """A listener option before the first `listener` line makes mosquitto 2.0.11 open
    a plain listener on 1883 as well: the shipped file must not do that."""
    opened = [line for line in pit.log().splitlines() if "listen socket on port" in line]
    assert opened
    assert all(f"port {pit.port}." in line for line in opened), opened
