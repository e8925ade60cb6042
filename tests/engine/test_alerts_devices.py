"""The device alerts of docs/rules.md's table, DEVICE_OFFLINE and SENSOR_FAULT, and its
warnings, WAR_WAGER_MISMATCH, WAGER_OUT_OF_LIMITS and BROKER_REFUSED: when they are
raised, their severity, how they are resolved."""

from __future__ import annotations

from datetime import timedelta

from table_controller.engine import (
    DeviceOffline,
    DeviceOnline,
    PublishRefused,
    ServiceAlert,
    ShoeStatus,
    device_states,
    stats_view,
)
from table_controller.engine.rules import NY, UK, Limits

from .helpers import INITIAL, TIE, WAR, Table, _dealing

# ---------------------------------------------------------------- devices


def test_device_offline_holds_and_device_online_resolves() -> None:
    t = _dealing(p1=(1000, None, None))
    t.feed(DeviceOnline(t.at(), "sensors"))
    out = t.feed(DeviceOffline(t.at(), "sensors", "ENODEV"))
    (alert,) = t.raised("DEVICE_OFFLINE", out)
    assert alert.data["severity"] == "critical"
    assert device_states(t.state)["sensors"] == {"state": "offline", "detail": "ENODEV"}
    t.cards(["KH", "4D"])
    assert t.records() == []
    out = t.feed(DeviceOnline(t.at(), "sensors"))
    # docs/rules.md: with wagers in action the board is back only once its first
    # complete snapshot has been compared with them.
    assert not t.alerts(out=out)
    assert t.state.held
    out = t.snapshot()
    (online,) = t.raised("DEVICE_ONLINE", out)
    assert online.data["severity"] == "info"
    (resolved,) = [e for e in t.alerts("DEVICE_OFFLINE", out) if e.data["resolved_by"]]
    assert resolved.data["alert"] == alert.data["alert"]
    assert resolved.data["resolved_by"] == "DEVICE_ONLINE"
    assert len(t.records()) == 1


def test_devices_start_offline() -> None:
    t = Table.of(NY)
    assert {d["state"] for d in device_states(t.state).values()} == {"offline"}
    t.feed(DeviceOnline(t.at(), "shoe"))
    assert device_states(t.state)["shoe"] == {"state": "ok", "detail": None}
    assert not t.alerts()


def test_shoe_status_is_a_device_fault() -> None:
    t = Table.of(NY)
    t.feed(DeviceOnline(t.at(), "shoe"))
    t.feed(ShoeStatus(t.at(), "DOOR_OPEN"))
    assert device_states(t.state)["shoe"] == {"state": "fault", "detail": "DOOR_OPEN"}
    t.feed(ShoeStatus(t.at(), "OK"))
    assert device_states(t.state)["shoe"] == {"state": "ok", "detail": None}


def test_sensor_fault_critical_when_the_spot_plays() -> None:
    t = _dealing(p1=(1000, None, None))
    out = t.fault(1, INITIAL)
    (alert,) = t.raised("SENSOR_FAULT", out)
    assert alert.data["severity"] == "critical"
    assert t.state.held


def test_sensor_fault_warning_when_the_spot_does_not_play() -> None:
    t = _dealing(p1=(1000, None, None))
    out = t.fault(4, TIE)
    (alert,) = t.raised("SENSOR_FAULT", out)
    assert alert.data["severity"] == "warning"
    assert not t.state.held


def test_sensor_fault_on_a_spot_that_goes_into_action() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (1000, None, None)})
    t.fault(1, INITIAL)
    assert t.raised("SENSOR_FAULT")[-1].data["severity"] == "warning"
    t.ok("NO_MORE_BETS")
    assert t.raised("SENSOR_FAULT")[-1].data["severity"] == "critical"
    assert t.state.held


# ---------------------------------------------------------------- warnings


def test_war_wager_mismatch_is_a_warning() -> None:
    t = _dealing(UK, p1=(1000, None, None))
    t.cards(["9H", "9S"])
    t.put(1, WAR, 800)
    t.ok("WAR", "1")
    (alert,) = t.raised("WAR_WAGER_MISMATCH", t.last)
    assert alert.data["severity"] == "warning"
    assert not t.state.held
    t.cards(["2H", "2D", "2S", "KH", "4D"])
    assert t.wager(1, "war")["amount"] == 800


def test_wager_out_of_limits_when_it_goes_into_action() -> None:
    t = Table.of(NY, limits=Limits(initial=(500, 5000), tie=(100, 1000)))
    t.open_shoe()
    t.bets({1: (200, 2000, None), 2: (1000, 500, None)})
    t.ok("NO_MORE_BETS")
    alerts = t.raised("WAGER_OUT_OF_LIMITS")
    assert sorted((a.data["position"], a.data["spot"]) for a in alerts) == [
        (1, "initial"),
        (1, "tie"),
    ]
    assert {a.data["severity"] for a in alerts} == {"warning"}
    t.cards(["9H", "9D", "9S"])
    t.put(2, WAR, 9000)
    t.put(2, TIE, 5000)
    t.ok("WAR", "2")  # war uses the initial limits, war_tie the tie limits
    t.ok("SURRENDER", "1")
    new = [a for a in t.raised("WAGER_OUT_OF_LIMITS") if a not in alerts]
    assert sorted((a.data["position"], a.data["spot"]) for a in new) == [
        (2, "war"),
        (2, "war_tie"),
    ]


def test_broker_refused_at_most_once_per_topic_per_minute() -> None:
    t = Table.of(NY)
    first = t.feed(PublishRefused(t.at(), "x/alerts", 0x87, "m1"))
    (alert,) = t.raised("BROKER_REFUSED", first)
    assert alert.data["severity"] == "warning"
    assert t.feed(PublishRefused(t.at(), "x/alerts", 0x87, "m2")) == []
    other = t.feed(PublishRefused(t.at(), "x/rounds", 0x87, "m3"))
    assert len(t.raised("BROKER_REFUSED", other)) == 1
    t.ticks += 61
    later = t.feed(PublishRefused(t.at(), "x/alerts", 0x87, "m4"))
    assert len(t.raised("BROKER_REFUSED", later)) == 1


def test_input_time_window_for_broker_refusals_uses_input_time_only() -> None:
    t = Table.of(NY)
    start = t.at()
    t.feed(PublishRefused(start, "x/state", 0x80, "a"))
    t.feed(PublishRefused(start + timedelta(seconds=59), "x/state", 0x80, "b"))
    t.feed(PublishRefused(start + timedelta(seconds=60), "x/state", 0x80, "c"))
    assert len(t.raised("BROKER_REFUSED")) == 2


# ---------------------------------------------------------------- the service's own


def test_an_alert_the_service_raises_is_an_event_in_its_round_and_counted() -> None:
    """JOURNAL_FAULT and REPLAY_UNAVAILABLE come from the service, as inputs: each is an
    `alert` event, in the round's alerts and in the stats, as every alert is; it holds
    nothing (the service itself refuses every input while its journal faults)."""
    t = _dealing(p1=(1000, None, None))
    raised = t.feed(ServiceAlert(t.at(), "jf-1", "JOURNAL_FAULT", "the journal cannot commit"))
    (event,) = t.raised("JOURNAL_FAULT", raised)
    assert event.data["severity"] == "critical"
    assert event.data["alert"] == "jf-1"
    assert event.data["round_id"] == t.state.round_id
    (resolved,) = t.alerts(
        "JOURNAL_FAULT", t.feed(ServiceAlert(t.at(), "jf-1", "JOURNAL_FAULT", "again", "JOURNAL"))
    )
    assert resolved.data["resolved_by"] == "JOURNAL"
    t.feed(ServiceAlert(t.at(), "ru-1", "REPLAY_UNAVAILABLE", "feed_seq 1..3 no longer held"))
    assert not t.state.held
    t.cards(["KH", "4D"])
    assert t.record()["alerts"] == ["jf-1", "ru-1"]
    assert stats_view(t.state)["alerts_by_code"] == {"JOURNAL_FAULT": 1, "REPLAY_UNAVAILABLE": 1}
    # No other code comes this way: the engine records nothing of one (and never raises).
    assert t.feed(ServiceAlert(t.at(), "x-1", "PAST_POSTING", "not the service's")) == []
