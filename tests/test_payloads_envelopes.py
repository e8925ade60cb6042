"""The envelope around docs/feed.md's payloads: each builder's topic, QoS and retain
flag, fresh ids, the table's own identity, the last will, the envelope from the config,
and enums of another module."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from table_controller.feed.payloads import TOPIC_RULES, TableStatus, Topic, parse_payload, rfc3339
from table_controller.service.config import parse_config
from table_controller.service.envelope import Envelope
from tests.payload_samples import ENV, TS, body, card, spec_round, status_body

# -- envelopes and topics ---------------------------------------------------------------


def test_each_builder_puts_its_payload_on_its_topic_with_its_qos_and_retain() -> None:
    state = {
        "phase": "tie_decision",
        "round_id": 3,
        "held": True,
        "dealer": None,
        "shoe": {"id": None, "cards_read": 0, "cover_seen": False},
        "positions": [{"position": 1, "wagers": {"initial": None, "war": None}, "cards": ["7H"]}],
        "dealer_cards": ["7S"],
        "burn_cards": 1,
    }
    alert = {
        "alert": "A-1",
        "code": "PAST_POSTING",
        "severity": "critical",
        "message": "chips added after no more bets",
        "round_id": 3,
        "position": 1,
        "spot": "initial",
        "resolved_by": "CONFIRM",
    }
    stats = {
        "rounds": 2,
        "rounds_per_hour": None,
        "ties": 1,
        "wars": 0,
        "surrenders": 1,
        "voids": 0,
        "alerts_by_code": {"PAST_POSTING": 1},
        "drop": None,
        "win": None,
    }
    built = {
        Topic.STATUS: ENV.status(status_body(), ts=TS, id="st-1"),
        Topic.STATE: ENV.state(state, ts=TS, id="sa-1"),
        Topic.ROUNDS: ENV.round_record(body(spec_round()), ts=TS, id="r-1"),
        Topic.ALERTS: ENV.alert(alert, ts=TS, id="a-1"),
        Topic.STATS: ENV.stats(stats, ts=TS, id="s-1"),
        Topic.EVENTS: ENV.event(card(), ts=TS, id="e-1"),
    }
    for topic, message in built.items():
        rule = TOPIC_RULES[topic]
        assert message.topic == f"casino/main-floor/table/war-07/{topic.value}"
        assert (message.qos, message.retain) == (rule.qos, rule.retained)
        out = json.loads(message.payload)
        assert out["id"] == message.id
        assert (out["table"], out["site"], out["ts"]) == ("war-07", "main-floor", rfc3339(TS))
        assert parse_payload(message.payload).id == message.id
    # The spec's record: the same JSON with our envelope.
    record = json.loads(built[Topic.ROUNDS].payload)
    assert body(record) == body(spec_round())


def test_a_fresh_id_every_time_unless_given() -> None:
    first = ENV.status(status_body(), ts=TS)
    second = ENV.status(status_body(), ts=TS)
    assert first.id != second.id
    assert ENV.status(status_body(), ts=TS, id="x").id == "x"


def test_a_payload_of_another_table_is_not_published_as_ours() -> None:
    other = Envelope(table="war-08", site="main-floor", prefix="casino/main-floor/table/war-08")
    status = TableStatus.model_validate({**status_body(), **other.fields(ts=TS)})
    with pytest.raises(ValueError, match="war-08"):
        ENV.message(status)


def test_the_last_will_is_the_status_offline_with_its_own_id_and_time() -> None:
    status = TableStatus.model_validate({**status_body(), **ENV.fields(ts=TS, id="st-1")})
    later = TS + timedelta(minutes=5)
    will = ENV.last_will(status, ts=later)
    assert (will.topic, will.qos, will.retain) == (ENV.topic(Topic.STATUS), 1, True)
    out = json.loads(will.payload)
    assert out["online"] is False
    assert out["id"] != "st-1"
    assert out["ts"] == rfc3339(later)
    assert {k: v for k, v in out.items() if k not in ("online", "id", "ts")} == {
        k: v for k, v in json.loads(status.to_json()).items() if k not in ("online", "id", "ts")
    }


def test_the_envelope_comes_from_the_config() -> None:
    cfg = parse_config(
        {
            "table": {"id": "war-07", "site": "main-floor"},
            "devices": {"shoe": "socket://127.0.0.1:1", "console": "socket://127.0.0.1:2"},
            "storage": {"path": "/tmp/x.sqlite3"},
            "mqtt": {"topic_prefix": "pit/{site}/{table}"},
        }
    )
    env = Envelope.from_config(cfg)
    assert env == Envelope(table="war-07", site="main-floor", prefix="pit/main-floor/war-07")
    assert env.topic(Topic.ROUNDS) == "pit/main-floor/war-07/rounds"


def test_the_engine_s_own_enums_are_accepted() -> None:
    from enum import StrEnum

    class Code(StrEnum):  # as another module might name them
        MISREAD = "MISREAD"

    message = ENV.stats(
        {
            "rounds": 0,
            "rounds_per_hour": 0,
            "ties": 0,
            "wars": 0,
            "surrenders": 0,
            "voids": 0,
            "alerts_by_code": {Code.MISREAD: 2},
            "drop": 0,
            "win": 0,
        },
        ts=TS,
    )
    assert json.loads(message.payload)["alerts_by_code"] == {"MISREAD": 2}
