"""A message whose envelope does not parse: kept, placed in its table's feed, acknowledged."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.light_table import LightTable
from table_controller.recorder.intake import FeedMessage, IntakeError, Leaf, parse_message
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.subscriber import Recorder
from table_controller.recorder.unparsed import ID_PREFIX, kept_unparsed
from table_controller.rigs.broker import MosquittoBroker
from tests.recorder.conftest import SITE, dealing, recorder_config, running, unique

ACK_TIMEOUT_S = 30.0
_TOPIC = "casino/s1/table/t1/events"


def _event(**fields: object) -> bytes:
    body = {
        "schema": "table-event/1",
        "id": "e1",
        "table": "t1",
        "site": "s1",
        "ts": "2026-01-01T00:00:00.000Z",
        "epoch": "ep",
        "feed_seq": 5,
        "type": "reshuffle_due",
    }
    return json.dumps({k: v for k, v in (body | fields).items() if v is not ...}).encode()


def _kept(payload: bytes, topic: str = _TOPIC) -> FeedMessage | None:
    with pytest.raises(IntakeError) as refused:
        parse_message(topic, payload)
    return kept_unparsed(topic, payload, str(refused.value))


@pytest.mark.parametrize(
    ("fields", "place"),
    [
        ({"ts": "yesterday"}, ("ep", 5)),
        ({"id": "x" * 129}, ("ep", 5)),
        ({"id": ..., "epoch": ...}, (None, 5)),  # as an alert: the table's current epoch
        ({"table": ..., "epoch": 7}, (None, None)),  # an epoch given but unreadable
        ({"ts": ..., "feed_seq": 0}, ("ep", None)),
    ],
)
def test_a_broken_envelope_is_kept_where_its_feed_places_it(
    fields: dict[str, object], place: tuple[str | None, int | None]
) -> None:
    payload = _event(**fields)
    msg = _kept(payload)
    assert msg is not None
    assert msg.id == ID_PREFIX + hashlib.sha256(payload).hexdigest()
    assert (msg.epoch, msg.feed_seq) == place
    assert (msg.site, msg.table, msg.leaf) == ("s1", "t1", Leaf.EVENTS)
    assert msg.payload == payload.decode()
    assert not msg.usable
    assert msg.unparsed
    assert "envelope" in str(msg.problem)


def test_only_a_sequenced_topic_keeps_what_it_cannot_parse() -> None:
    assert _kept(b"\xff not json") is not None
    for topic in ("casino/s1/table/t1/status", "casino/s1/table/t1/nothing", "t1/events"):
        assert kept_unparsed(topic, b"{}", "envelope: id: missing") is None


@given(st.binary(max_size=200), st.sampled_from(["events", "rounds", "alerts"]))
def test_whatever_arrives_is_kept_as_json_text_a_database_holds(payload: bytes, leaf: str) -> None:
    msg = kept_unparsed(f"casino/s1/table/t1/{leaf}", payload, "envelope: unreadable")
    assert msg is not None
    assert isinstance(json.loads(msg.payload), dict | list | str | int | float | bool | None)
    for value in (msg.payload, msg.schema, msg.epoch, msg.ts):
        if value is not None:
            assert "\x00" not in value
            value.encode("utf-8")  # raises on a lone surrogate
    if msg.feed_seq is not None:
        assert 1 <= msg.feed_seq < 2**53


async def test_a_broken_envelope_does_not_stop_the_tables_acks(
    mosquitto: MosquittoBroker, db_url: str, db: Backend
) -> None:
    """The table sends feed_seq 3 with a time no one can read, and sends the same bytes
    again for every replay: the acks still reach its last message."""
    cfg = recorder_config(mosquitto, db_url)
    table = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=unique("unparsed"))
    async with running(Recorder(cfg.mqtt, db)), dealing(table):
        table.deal_round()
        topic, payload = table.held[3]
        broken = json.dumps(json.loads(payload) | {"ts": "at half past"}).encode()
        table.held[3] = (topic, broken)  # before it is first sent: every copy is broken
        await table.wait_acked(ACK_TIMEOUT_S)
    rows = await db.fetch(
        "SELECT feed_seq, id, problem FROM messages WHERE table_id = ? AND epoch = ?",
        (table.table, table.epoch),
    )
    by_seq = {int(seq): (id, problem) for seq, id, problem in rows}
    assert sorted(by_seq) == list(range(1, table.last_feed_seq + 1))
    kept_id, problem = by_seq.pop(3)
    assert kept_id == ID_PREFIX + hashlib.sha256(broken).hexdigest()
    assert "ts" in problem
    assert {id for id, _ in by_seq.values()} == {table.ids[s] for s in by_seq}
