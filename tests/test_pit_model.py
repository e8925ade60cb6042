"""PitModel fed with hand-written feed payloads: the views of status, state, stats and
rounds, and alerts raised, resolved and left behind by another instance."""

from __future__ import annotations

from table_controller.pit.model import PitModel
from table_controller.pit.views import Link, TableKey
from tests.pit_rig import _consistent, _model, _view
from tests.test_pit_payloads import (
    SITE,
    TABLE,
    alert,
    enc,
    last_will,
    round_record,
    state,
    stats,
    status,
    topic,
    void_record,
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
