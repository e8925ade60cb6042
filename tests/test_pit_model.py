"""PitModel fed with hand-written feed payloads: views, alerts, duplicates, gaps, bad input."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from table_controller.feed.topics import DEFAULT_PREFIX
from table_controller.pit.errors import PitConfigError
from table_controller.pit.model import PitModel
from table_controller.pit.render import render
from table_controller.pit.topics import subscription_filter
from table_controller.pit.views import Link, TableKey, TableView
from tests.test_pit_payloads import (
    SITE,
    TABLE,
    alert,
    card_event,
    enc,
    event,
    last_will,
    round_record,
    state,
    stats,
    status,
    topic,
    void_record,
)


def _model(**kwargs: Any) -> PitModel:
    return PitModel(site=SITE, **kwargs)


def _view(model: PitModel, table: str = TABLE) -> TableView:
    view = model.table(table)
    assert view is not None
    return view


def _consistent(model: PitModel) -> None:
    """Every message is accounted for exactly once."""
    assert model.messages == (
        model.accepted + model.duplicates + model.malformed + model.unexpected
    )


# ---------------------------------------------------------------- status and state


def test_status_shows_online_devices_and_outbox() -> None:
    model = _model()
    payload = status(sensors="fault", detail="spot 4 sensor", depth=3, oldest_age_s=12.5)
    assert model.feed(topic("status"), enc(payload))
    view = _view(model)
    assert view.key == TableKey(SITE, TABLE)
    assert view.link is Link.ONLINE
    assert view.status is not None
    assert [(d.name, d.state, d.detail) for d in view.status.devices] == [
        ("shoe", "ok", None),
        ("sensors", "fault", "spot 4 sensor"),
        ("console", "ok", None),
    ]
    assert (view.status.outbox_depth, view.status.outbox_oldest_age_s) == (3, 12.5)
    assert (view.status.rules, view.status.decks, view.status.positions) == ("ny", 6, 7)


def test_last_will_turns_a_table_offline() -> None:
    model = _model()
    model.feed(topic("status"), enc(status()))
    assert _view(model).link is Link.ONLINE
    # docs/feed.md: the retained last will publishes online:false on status.
    assert model.feed(topic("status"), enc(last_will()))
    assert _view(model).link is Link.OFFLINE
    model.feed(topic("status"), enc(status()))
    assert _view(model).link is Link.ONLINE


def test_an_emptied_retained_status_is_cleared_not_malformed() -> None:
    model = _model()
    model.feed(topic("status"), enc(status()))
    assert model.feed(topic("status"), b"")
    assert _view(model).link is Link.UNKNOWN
    assert model.malformed == 0
    _consistent(model)


def test_state_shows_phase_round_dealer_hold_and_shoe() -> None:
    model = _model()
    payload = state(phase="tie_decision", round_id=88, held=True, dealer="D-7", cards_read=12)
    model.feed(topic("state"), enc(payload))
    view = _view(model).state
    assert view is not None
    assert (view.phase, view.round_id, view.held, view.dealer) == (
        "tie_decision",
        "88",
        True,
        "D-7",
    )
    assert (view.shoe_id, view.cards_read, view.cover_seen) == ("shoe-0042", 12, False)
    assert view.live_positions == 2


def test_stats_keep_every_figure() -> None:
    model = _model()
    model.feed(topic("stats"), enc(stats(rounds=321)))
    view = _view(model).stats
    assert view is not None
    values = dict(view.values)
    assert values["rounds"] == 321
    assert values["drop"] == 1234500
    assert dict(view.groups)["alerts_by_code"] == (("PAST_POSTING", 2), ("LATE_WAGER", 1))


def test_tables_of_two_sites_are_kept_apart() -> None:
    model = PitModel()  # every site
    model.feed(topic("status", site="north"), enc(status(site="north")))
    model.feed(topic("status", site="south"), enc(last_will(site="south")))
    assert [(v.key, v.link) for v in model.tables] == [
        (TableKey("north", TABLE), Link.ONLINE),
        (TableKey("south", TABLE), Link.OFFLINE),
    ]
    assert model.table(TABLE, "south") is not None
    assert model.subscription == "casino/+/table/+/#"


# ---------------------------------------------------------------- rounds


def test_round_record_shows_dealer_card_positions_and_net() -> None:
    model = _model()
    model.feed(topic("rounds"), enc(round_record(1207)))
    (record,) = _view(model).rounds
    assert (record.round_id, record.dealer_card, record.void, record.net) == (
        "1207", "7S", False, 3750,
    )  # fmt: skip
    (position,) = record.positions
    assert (position.position, position.card, position.outcome, position.decision) == (
        1, "7H", "tie", "surrender",
    )  # fmt: skip
    assert position.net == 3750


def test_only_the_last_rounds_are_kept_newest_first() -> None:
    model = _model(rounds_kept=3)
    for round_id in range(1, 8):
        model.feed(topic("rounds"), enc(round_record(round_id)))
    assert [r.round_id for r in _view(model).rounds] == ["7", "6", "5"]


def test_void_round_is_marked_with_its_reason() -> None:
    model = _model()
    model.feed(topic("rounds"), enc(void_record(55, "misdeal")))
    (record,) = _view(model).rounds
    assert record.void
    assert record.void_reason == "misdeal"
    assert record.net == 0


# ---------------------------------------------------------------- alerts


def test_alert_raised_then_resolved() -> None:
    model = _model()
    model.feed(topic("alerts"), enc(alert("a-1", "PAST_POSTING")))
    model.feed(topic("alerts"), enc(alert("a-2", "MISREAD", position=None, spot=None)))
    view = _view(model)
    assert [a.alert for a in view.open_alerts] == ["a-1", "a-2"]
    assert view.critical_open == 2
    # docs/feed.md: a second message for the same `alert` carries how it was resolved.
    model.feed(topic("alerts"), enc(alert("a-1", "PAST_POSTING", resolved_by="CONFIRM")))
    assert [a.alert for a in _view(model).open_alerts] == ["a-2"]
    model.feed(topic("alerts"), enc(alert("a-2", "MISREAD", resolved_by="CARD")))
    assert _view(model).open_alerts == ()
    _consistent(model)


def _alert_ids(model: PitModel) -> tuple[list[str], list[str]]:
    view = _view(model)
    return [a.alert for a in view.open_alerts], [a.alert for a in view.notices]


def test_alerts_an_instance_left_behind_go_when_its_status_goes_offline() -> None:
    # The running table A and an intruder B with the same id (docs/feed.md: one controller per
    # table). B's alerts stayed on the pit after B exited; now its last will clears them.
    model = _model()
    model.feed(topic("status"), enc(status(instance="A", msg_id="s-a")))
    model.feed(topic("alerts"), enc(alert("a-1", "MISREAD")))
    model.feed(topic("alerts"), enc(alert("a-2", "LATE_WAGER", "warning")))
    model.feed(topic("status"), enc(status(instance="B", msg_id="s-b")))
    assert _alert_ids(model) == ([], [])  # A's status went: replaced by B's
    for n in range(3):
        model.feed(topic("alerts"), enc(alert(f"b-{n}", "DEVICE_OFFLINE", spot=None)))
    assert _alert_ids(model) == (["b-0", "b-1", "b-2"], [])
    model.feed(topic("status"), enc(last_will(instance="B")))
    assert _alert_ids(model) == ([], [])
    model.feed(topic("status"), enc(status(instance="A", msg_id="s-a2")))
    model.feed(topic("alerts"), enc(alert("a-3", "MISREAD")))
    assert _alert_ids(model) == (["a-3"], [])
    _consistent(model)


def test_an_instance_going_offline_keeps_the_alerts_of_another() -> None:
    model = _model()
    model.feed(topic("status"), enc(status(instance="A", msg_id="s-a")))
    model.feed(topic("alerts"), enc(alert("a-1", "MISREAD")))
    model.feed(topic("status"), enc(last_will(instance="B")))  # a stale will of another
    assert _alert_ids(model) == (["a-1"], [])
    model.feed(topic("status"), enc(status(instance="A", msg_id="s-a3")))
    assert _alert_ids(model) == (["a-1"], [])  # the same instance again changes nothing


def test_alerts_seen_before_any_instance_stay_until_a_status_goes_offline() -> None:
    model = _model()
    model.feed(topic("alerts"), enc(alert("x-1", "MISREAD")))
    model.feed(topic("status"), enc(status(instance="A", msg_id="s-a")))
    assert _alert_ids(model) == (["x-1"], [])
    model.feed(topic("status"), enc(last_will(instance="A")))
    assert _alert_ids(model) == (["x-1"], [])  # not A's
    # A table that names no instance (an older one) leaves its alerts behind when it goes.
    model.feed(topic("status"), enc(status(msg_id="s-old")))
    model.feed(topic("alerts"), enc(alert("x-2", "MISREAD")))
    model.feed(topic("status"), enc(last_will(ts="2025-03-01T20:16:00Z")))
    assert _alert_ids(model) == ([], [])


def test_a_recorders_ack_and_replay_are_neither_shown_nor_unexpected() -> None:
    model = _model()
    model.feed(topic("ack"), b'{"schema": "table-ack/1"}')
    model.feed(topic("replay"), b"anything")
    assert model.unexpected == model.malformed == 0
    assert model.tables == []


def test_device_offline_is_resolved_by_device_online() -> None:
    model = _model()
    model.feed(topic("alerts"), enc(alert("dev-1", "DEVICE_OFFLINE", position=None, spot=None)))
    assert _view(model).critical_open == 1
    model.feed(
        topic("alerts"),
        enc(alert("dev-1", "DEVICE_OFFLINE", resolved_by="DEVICE_ONLINE", position=None)),
    )
    assert _view(model).open_alerts == ()


def test_warnings_are_notices_not_open_alerts() -> None:
    # docs/rules.md: only critical alerts are open until resolved; warnings need no answer.
    model = _model(notices_kept=2)
    for n, code in enumerate(("LATE_WAGER", "WAR_WAGER_MISMATCH", "BROKER_REFUSED")):
        model.feed(topic("alerts"), enc(alert(f"w-{n}", code, "warning")))
    view = _view(model)
    assert view.open_alerts == ()
    assert [a.code for a in view.notices] == ["BROKER_REFUSED", "WAR_WAGER_MISMATCH"]


def test_an_unknown_severity_stays_open_until_resolved() -> None:
    model = _model()
    model.feed(topic("alerts"), enc(alert("x-1", "NEW_CODE", "severe")))
    view = _view(model)
    assert [a.alert for a in view.open_alerts] == ["x-1"]
    assert view.critical_open == 0


def test_a_raise_arriving_after_its_resolution_stays_closed() -> None:
    model = _model()
    model.feed(topic("alerts"), enc(alert("a-9", resolved_by="VOID_ROUND")))
    model.feed(topic("alerts"), enc(alert("a-9")))
    assert _view(model).open_alerts == ()


def test_an_alert_raised_again_keeps_its_place() -> None:
    model = _model()
    for alert_id in ("a-1", "a-2"):
        model.feed(topic("alerts"), enc(alert(alert_id)))
    model.feed(topic("alerts"), enc(alert("a-1", message="again", msg_id="other-message")))
    open_alerts = _view(model).open_alerts
    assert (open_alerts[0].alert, open_alerts[0].message) == ("a-1", "again")
    assert len(open_alerts) == 2


def test_an_alert_without_its_alert_id_is_malformed() -> None:
    model = _model()
    payload = alert("a-1")
    del payload["alert"]
    assert not model.feed(topic("alerts"), enc(payload))
    assert model.malformed == 1
    assert _view(model).open_alerts == ()


# ---------------------------------------------------------------- duplicates


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("rounds", round_record(1207)),
        ("alerts", alert("a-1")),
        ("events", event(1)),
        ("status", status(msg_id="status-1")),
    ],
    ids=["rounds", "alerts", "events", "status"],
)
def test_a_message_sent_again_is_dropped(kind: str, payload: dict[str, Any]) -> None:
    model = _model()
    assert model.feed(topic(kind), enc(payload))
    before = _view(model)
    assert not model.feed(topic(kind), enc(payload))
    after = _view(model)
    assert model.duplicates == after.duplicates == 1
    assert (after.rounds, after.open_alerts, after.events) == (
        before.rounds, before.open_alerts, before.events,
    )  # fmt: skip
    _consistent(model)


def test_a_retained_value_sent_again_after_another_is_shown_again() -> None:
    """The broker keeps the last retained message: an older status resent after the
    last will is what it holds again, from a table that is connected again."""
    model = _model()
    online = status(msg_id="status-1")
    will = {**last_will(), "id": "will-1"}
    for payload in (online, will, online):
        assert model.feed(topic("status"), enc(payload))
    assert _view(model).link is Link.ONLINE
    assert model.duplicates == 0
    assert not model.feed(topic("status"), enc(online))
    assert model.duplicates == 1


def test_a_cleared_retained_value_can_come_back_with_its_id() -> None:
    model = _model()
    model.feed(topic("stats"), enc({**stats(), "id": "stats-1"}))
    model.feed(topic("stats"), b"")
    assert model.feed(topic("stats"), enc({**stats(), "id": "stats-1"}))
    assert _view(model).stats is not None


def test_a_resent_resolution_does_not_reopen_or_double_count() -> None:
    model = _model()
    raised, resolved = alert("a-1"), alert("a-1", resolved_by="CONFIRM")
    for payload in (raised, resolved, raised, resolved):
        model.feed(topic("alerts"), enc(payload))
    assert _view(model).open_alerts == ()
    assert model.duplicates == 2


def test_different_ids_are_different_messages() -> None:
    model = _model()
    model.feed(topic("rounds"), enc(round_record(5, msg_id="r-a")))
    model.feed(topic("rounds"), enc(round_record(5, msg_id="r-b")))
    assert len(_view(model).rounds) == 2
    assert model.duplicates == 0


def test_a_bad_message_does_not_make_its_good_resend_a_duplicate() -> None:
    model = _model()
    bad = round_record(3)
    bad["net"] = "lots"
    assert not model.feed(topic("rounds"), enc(bad))
    assert model.feed(topic("rounds"), enc(round_record(3)))
    assert model.malformed == 1
    assert model.duplicates == 0


# ---------------------------------------------------------------- gaps in events


def _events(model: PitModel, seqs: list[int], epoch: str = "journal-a") -> None:
    for seq in seqs:
        model.feed(topic("events"), enc(event(seq, epoch=epoch)))


def test_gaps_in_seq_are_counted() -> None:
    model = _model()
    _events(model, [1, 2, 5, 6, 9])
    events = _view(model).events
    assert (events.missing, events.last_seq, events.received) == (4, 9, 5)


def test_a_late_event_fills_its_gap() -> None:
    model = _model()
    _events(model, [1, 2, 5])
    _events(model, [3])
    events = _view(model).events
    assert (events.missing, events.out_of_order, events.last_seq) == (1, 0, 5)


def test_an_event_below_the_last_that_fills_no_gap_is_out_of_order() -> None:
    model = _model()
    _events(model, [10, 11])
    model.feed(topic("events"), enc(event(11, msg_id="another-id")))
    _events(model, [4])  # before the first this pit saw: not a gap it counted
    events = _view(model).events
    assert (events.missing, events.out_of_order) == (0, 2)


def test_a_pit_started_late_counts_no_gap_before_the_first_event() -> None:
    model = _model()
    _events(model, [5000, 5001])
    assert _view(model).events.missing == 0


def test_a_new_epoch_starts_its_own_count() -> None:
    # docs/feed.md: seq is per table, and epoch is the journal's identity.
    model = _model()
    _events(model, [1, 2, 3], epoch="journal-a")
    _events(model, [1], epoch="journal-b")
    _events(model, [3], epoch="journal-b")
    events = _view(model).events
    assert (events.missing, events.epoch, events.last_seq) == (1, "journal-b", 3)


def test_gaps_are_per_table() -> None:
    model = _model()
    for table, seqs in (("war-01", [1, 3]), ("war-02", [7, 8])):
        for seq in seqs:
            model.feed(topic("events", table=table), enc(event(seq, table=table)))
    assert _view(model, "war-01").events.missing == 1
    assert _view(model, "war-02").events.missing == 0


def test_a_burn_card_event_shows_no_rank() -> None:
    model = _model()
    model.feed(topic("events"), enc(card_event(1, n=1, card=None, role="burn", position=None)))
    events = _view(model).events
    assert (events.last_type, events.last_detail) == ("card", "burn")
    model.feed(topic("events"), enc(card_event(2, n=2, card="7H", role="position", position=1)))
    assert _view(model).events.last_detail == "7H position P1"


@settings(max_examples=150)
@given(
    st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=80),
    st.randoms(use_true_random=False),
)
def test_missing_is_what_never_arrived_after_the_first(seqs: list[int], rnd: random.Random) -> None:
    """Whatever the order and repetition, the gap count is the seqs between the first seen
    and the highest seen that never arrived."""
    model = _model()
    for seq in seqs:
        # Half the repeats are resends (same id), half new messages with a reused seq.
        msg_id = f"ev-{seq}" if rnd.random() < 0.5 else f"ev-{seq}-{rnd.random()}"
        model.feed(topic("events"), enc(event(seq, msg_id=msg_id)))
    first, highest = seqs[0], max(seqs)
    expected = set(range(first, highest + 1)) - set(seqs)
    assert _view(model).events.missing == len(expected)
    _consistent(model)


# ---------------------------------------------------------------- malformed and unexpected


def _with(payload: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``payload`` with the field at a dotted ``path`` set to ``value``."""
    out: dict[str, Any] = json.loads(json.dumps(payload))
    node: Any = out
    *parents, leaf = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    return out


MALFORMED: list[tuple[str, str, bytes]] = [
    ("status", "truncated JSON", b'{"schema": "table-status/1", "online": tr'),
    ("status", "not an object", b"[1, 2, 3]"),
    ("status", "null", b"null"),
    ("status", "not UTF-8", b'{"schema": "table-status/1", "x": "\xff\xfe"}'),
    ("status", "NaN", b'{"schema": "table-status/1", "outbox": {"depth": NaN}}'),
    ("status", "deep nesting", b"[" * 100_000 + b"]" * 100_000),
    ("status", "no schema", enc({k: v for k, v in status().items() if k != "schema"})),
    ("status", "schema of another topic", enc(_with(status(), "schema", "war-round/1"))),
    ("status", "online as a word", enc(_with(status(), "online", "yes"))),
    ("status", "devices as a list", enc(_with(status(), "devices", ["shoe"]))),
    ("status", "device as a word", enc(_with(status(), "devices.shoe", "ok"))),
    ("status", "depth as text", enc(_with(status(), "outbox.depth", "3"))),
    ("status", "depth true", enc(_with(status(), "outbox.depth", True))),
    ("status", "table of another topic", enc(_with(status(), "table", "war-99"))),
    ("status", "site of another topic", enc(_with(status(), "site", "elsewhere"))),
    ("state", "round id a float", enc(_with(state(), "round_id", 12.5))),
    ("state", "held as 1", enc(_with(state(), "held", 1))),
    ("state", "positions a number", enc(_with(state(), "positions", 3))),
    ("rounds", "positions an object", enc(_with(round_record(), "positions", {"1": {}}))),
    ("rounds", "position a string", enc(_with(round_record(), "positions.0", "P1"))),
    ("rounds", "net a float", enc(_with(round_record(), "net", 37.5))),
    ("rounds", "void a string", enc(_with(round_record(), "void", "no"))),
    ("rounds", "empty", b""),
    ("alerts", "resolved_by a number", enc(_with(alert("a"), "resolved_by", 1))),
    ("alerts", "alert id a list", enc(_with(alert("a"), "alert", ["a"]))),
    ("events", "no seq", enc({k: v for k, v in event(1).items() if k != "seq"})),
    ("events", "seq as text", enc(_with(event(1), "seq", "1"))),
    ("events", "no epoch", enc({k: v for k, v in event(1).items() if k != "epoch"})),
    ("stats", "a count as an object in a group", enc(_with(stats(), "alerts_by_code.X", {}))),
    ("status", "too big", b'{"schema": "table-status/1", "x": "' + b"a" * (1 << 20) + b'"}'),
]


@pytest.mark.parametrize(("kind", "payload"), [(k, p) for k, _, p in MALFORMED],
                         ids=[f"{k}-{why}" for k, why, _ in MALFORMED])  # fmt: skip
def test_malformed_messages_are_counted_not_raised(kind: str, payload: bytes) -> None:
    model = _model()
    model.feed(topic("status"), enc(status()))
    model.feed(topic("rounds"), enc(round_record(1)))
    model.feed(topic("alerts"), enc(alert("keep")))
    before = _view(model)
    assert not model.feed(topic(kind), payload)
    after = _view(model)
    assert model.malformed == after.malformed == 1
    assert (after.status, after.state, after.rounds, after.open_alerts, after.events) == (
        before.status, before.state, before.rounds, before.open_alerts, before.events,
    )  # fmt: skip
    _consistent(model)


UNEXPECTED: list[tuple[str, bytes]] = [
    (topic("weather"), enc(status())),
    (topic("status") + "/extra", enc(status())),
    (f"casino/{SITE}/table/{TABLE}", enc(status())),
    (f"casino/elsewhere/table/{TABLE}/status", enc(status(site="elsewhere"))),
    ("somewhere/else", b"{}"),
    (topic("status"), enc(_with(status(), "schema", "table-status/2"))),
]


@pytest.mark.parametrize(
    ("where", "payload"),
    UNEXPECTED,
    ids=["kind", "deeper", "prefix-only", "other-site", "outside", "v2"],
)
def test_unexpected_messages_are_counted_not_raised(where: str, payload: bytes) -> None:
    model = _model()
    assert not model.feed(where, payload)
    assert model.unexpected == 1
    assert model.malformed == 0
    _consistent(model)


def test_text_is_made_safe_to_show() -> None:
    model = _model()
    payload = alert("a-1", message="chips \x1b[2J\x07 moved \u202eevil\ud800 [bold]x[/]")
    model.feed(topic("alerts"), json.dumps(payload).encode())  # \ud800 stays an escape
    (shown,) = _view(model).open_alerts
    assert shown.message is not None
    assert not any(c in shown.message for c in "\x1b\x07\u202e\ud800")
    assert "[bold]x[/]" in shown.message
    shown.message.encode("utf-8")  # a lone surrogate would fail here
    long = alert("a-2", message="x" * 10_000)
    model.feed(topic("alerts"), enc(long))
    assert len(_view(model).open_alerts[1].message or "") <= 200


# ---------------------------------------------------------------- any input at all

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_KINDS = ("status", "state", "events", "rounds", "alerts", "stats")
_SCHEMAS = {
    "status": "table-status/1", "state": "table-state/1", "events": "table-event/1",
    "rounds": "war-round/1", "alerts": "table-alert/1", "stats": "table-stats/1",
}  # fmt: skip
_FIELDS = (
    "online", "devices", "outbox", "phase", "round_id", "held", "dealer", "shoe",
    "positions", "seq", "epoch", "type", "card", "role", "position", "dealer_card",
    "dealer_war_card", "void", "void_reason", "net", "alert", "code", "severity",
    "message", "spot", "resolved_by", "rounds", "alerts_by_code", "id", "table", "site",
)  # fmt: skip


_VALID: dict[str, Any] = {
    "status": status(sensors="fault", detail="door"),
    "state": state(),
    "events": card_event(1, n=1, card="7H", role="position", position=1),
    "rounds": round_record(),
    "alerts": alert("a-1"),
    "stats": stats(),
}


@st.composite
def _payloads(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid spec payload with some fields replaced by any JSON, or removed."""
    kind = draw(st.sampled_from(_KINDS))
    payload = json.loads(json.dumps(_VALID[kind]))
    for name in draw(st.lists(st.sampled_from(_FIELDS), max_size=4, unique=True)):
        if draw(st.booleans()):
            payload.pop(name, None)
        else:
            payload[name] = draw(_json)
    if draw(st.booleans()):
        payload["id"] = draw(st.sampled_from(["m-1", "m-2", "m-3"]))
    return kind, json.dumps(payload).encode()


@settings(max_examples=100)
@given(st.lists(_payloads(), min_size=1, max_size=12))
def test_any_json_payload_is_taken_or_counted(messages: list[tuple[str, bytes]]) -> None:
    model = _model()
    for kind, payload in messages:
        model.feed(topic(kind), payload)
    _consistent(model)
    Console(file=_Sink(), width=100).print(render(model))


@settings(max_examples=100)
@given(st.sampled_from(_KINDS), st.binary(max_size=200), st.text(max_size=30))
def test_any_bytes_on_any_topic_are_taken_or_counted(kind: str, payload: bytes, level: str) -> None:
    model = _model()
    model.feed(topic(kind), payload)
    model.feed(f"casino/{SITE}/table/{level}/{kind}", payload)
    _consistent(model)
    Console(file=_Sink(), width=100).print(render(model))


class _Sink(io.StringIO):
    """A console file that keeps nothing but checks what a UTF-8 terminal would need."""

    def write(self, text: str) -> int:
        text.encode("utf-8")
        return len(text)


# ---------------------------------------------------------------- prefixes


@pytest.mark.parametrize(
    ("prefix", "site", "expected"),
    [
        (DEFAULT_PREFIX, SITE, f"casino/{SITE}/table/+/#"),
        (DEFAULT_PREFIX, None, "casino/+/table/+/#"),
        ("pits/{table}", None, "pits/+/#"),
        ("floor-{site}/+/t-{table}", "x", "floor-x/+/+/#"),
        ("floor-{site}/+/t-{table}", None, "+/+/+/#"),
    ],
)
def test_subscription_filter(prefix: str, site: str | None, expected: str) -> None:
    assert subscription_filter(prefix, site) == expected


def test_a_custom_prefix_is_matched_whole_level_by_level() -> None:
    model = PitModel("floor-{site}/+/t-{table}")
    assert model.feed("floor-east/any/t-war-3/status", enc(status(table="war-3", site="east")))
    assert [v.key for v in model.tables] == [TableKey("east", "war-3")]
    assert not model.feed("floor-east/any/war-3/status", enc(status(table="war-3")))
    assert model.unexpected == 1


def test_a_prefix_without_site_takes_the_pit_site() -> None:
    model = PitModel("pits/{table}", site="north")
    model.feed("pits/war-1/status", enc(status(table="war-1", site="north")))
    assert [v.key for v in model.tables] == [TableKey("north", "war-1")]


@pytest.mark.parametrize(
    "prefix",
    ["casino/{site}/table", "casino/{table}/{table}", "casino/#/{table}", "/casino/{table}",
     "casino/{table}/", "casino/{other}/{table}", "casino/x+y/{table}", "casino/{table"],
)  # fmt: skip
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(PitConfigError, match="--prefix"):
        PitModel(prefix)


@pytest.mark.parametrize("site", ["a/b", "+", "#", ""])
def test_bad_sites_are_refused(site: str) -> None:
    with pytest.raises(PitConfigError, match="--site"):
        PitModel(site=site)


def test_the_model_and_the_view_load_nothing_of_the_table_service() -> None:
    """A pit machine runs no table: its model, parsing and rendering, and the feed's
    payload models, import nothing of ``table_controller.service`` (checked in a fresh
    interpreter, so that what other tests imported does not hide an import)."""
    code = (
        "import sys\n"
        "import table_controller.feed.payloads, table_controller.pit.model\n"
        "import table_controller.pit.render, table_controller.pit.views\n"
        "print(sorted(m for m in sys.modules if m.startswith('table_controller.service')"
        " or m in ('sqlite3', 'aiomqtt', 'paho')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"
