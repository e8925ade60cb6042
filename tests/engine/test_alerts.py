"""Every alert of docs/rules.md's table: when it is raised, its severity, how it is resolved."""

from __future__ import annotations

from datetime import timedelta

import pytest

from table_controller.engine import (
    DeviceOffline,
    DeviceOnline,
    Event,
    Phase,
    PublishRefused,
    ReadGap,
    ShoeStatus,
    device_states,
    state_view,
)
from table_controller.engine.rules import NY, STANDARD, UK, Limits, RulesProfile

from .helpers import INITIAL, TIE, WAR, Table


def _dealing(rules: RulesProfile = NY, **bets: tuple[int | None, ...]) -> Table:
    t = Table.of(rules)
    t.open_shoe()
    t.bets({int(k[1:]): v for k, v in bets.items()} or {1: (1000, None, None)})
    t.ok("NO_MORE_BETS")
    return t


# ---------------------------------------------------------------- PAST_POSTING


def test_past_posting_chips_added_to_a_playing_spot_after_no_more_bets() -> None:
    """§(g)(2): no wager may be altered after no more bets; critical, holds the round."""
    t = _dealing(p1=(1000, None, None))
    out = t.put(1, INITIAL, 1500)
    (alert,) = t.raised("PAST_POSTING", out)
    assert alert.data["severity"] == "critical"
    assert (alert.data["position"], alert.data["spot"]) == (1, "initial")
    assert alert.data["round_id"] == 1
    assert t.state.held
    t.cards(["KH", "3D"])
    assert t.records() == [], "nothing is settled while held"
    t.ok("CONFIRM")
    assert not t.state.held
    # docs/rules.md: after a confirmed PAST_POSTING the wager settles at its latched amount.
    assert t.wager(1, "initial")["amount"] == 1000
    assert t.wager(1, "initial")["net"] == 1000
    assert alert.data["alert"] in t.record()["alerts"]


def test_past_posting_a_tie_wager_placed_after_the_latch() -> None:
    t = _dealing(p1=(1000, None, None))
    t.card("KH")
    out = t.put(1, TIE, 500)
    (alert,) = t.raised("PAST_POSTING", out)
    assert alert.data["spot"] == "tie"


def test_past_posting_presence_only_board_sees_new_chips() -> None:
    t = Table.of(NY, rfid=False)
    t.open_shoe()
    t.bets({1: (100, None, None)})
    t.ok("NO_MORE_BETS")
    out = t.put(1, TIE)
    assert len(t.raised("PAST_POSTING", out)) == 1


def test_past_posting_raised_once_while_open() -> None:
    t = _dealing(p1=(1000, None, None))
    t.put(1, INITIAL, 1500)
    t.put(1, INITIAL, 1000)
    t.put(1, INITIAL, 2000)
    assert len(t.raised("PAST_POSTING")) == 1


def test_war_and_tie_spots_may_change_during_the_tie_decision() -> None:
    """docs/rules.md: PAST_POSTING except the war / war-tie spots in tie_decision."""
    t = _dealing(p1=(1000, 100, None), p2=(1000, None, None))
    t.cards(["9H", "KH", "9S"])
    t.put(1, WAR, 1000)
    t.put(1, TIE, 300)
    t.take(1, TIE)
    t.put(1, TIE, 200)
    assert not t.alerts("PAST_POSTING")
    assert not t.alerts("WAGER_REMOVED")


def test_past_posting_on_the_war_spot_during_the_war_deal() -> None:
    t = _dealing(UK, p1=(1000, None, None))
    t.cards(["9H", "9S"])
    t.put(1, WAR, 1000)
    t.ok("WAR", "1")
    out = t.put(1, WAR, 3000)
    (alert,) = t.raised("PAST_POSTING", out)
    assert alert.data["spot"] == "war"
    t.ok("CONFIRM")
    t.cards(["2H", "2D", "2S", "KH", "4D"])
    assert t.wager(1, "war")["amount"] == 1000


# ---------------------------------------------------------------- WAGER_REMOVED


def test_wager_removed_before_settlement() -> None:
    t = _dealing(p1=(1000, 200, None))
    out = t.take(1, INITIAL)
    (alert,) = t.raised("WAGER_REMOVED", out)
    assert alert.data["severity"] == "critical"
    assert t.state.held
    t.cards(["3H", "KD"])
    assert t.records() == []
    t.ok("CONFIRM")
    assert t.wager(1, "initial")["amount"] == 1000
    assert t.wager(1, "initial")["net"] == -1000


def test_wager_lowered_in_value_is_removed() -> None:
    t = _dealing(p1=(1000, None, None))
    out = t.put(1, INITIAL, 600)
    assert len(t.raised("WAGER_REMOVED", out)) == 1


def test_settled_spots_change_freely() -> None:
    """docs/rules.md: a spot's chips may change without an alert once its wager is settled."""
    t = _dealing(p1=(1000, 100, None), p2=(1000, 100, None))
    t.cards(["3H", "9H", "9S"])  # P1 lost (settled), P2 tied
    assert t.phase() is Phase.TIE_DECISION
    t.take(1, INITIAL)
    t.take(1, TIE)
    t.take(2, TIE)  # the tie wager won and was paid
    assert not t.alerts("WAGER_REMOVED")


@pytest.mark.parametrize("rules", [NY, UK, STANDARD], ids=["ny", "uk", "standard"])
def test_si3i_initial_settled_at_surrender(rules: RulesProfile) -> None:
    """§(i)(3)(i): half collected, half returned at the surrender: chips may leave."""
    t = _dealing(rules, p1=(1000, None, None), p2=(1000, None, None))
    t.cards(["9H", "9C", "9S"])
    t.ok("SURRENDER", "1")
    t.take(1, INITIAL)
    assert not t.alerts("WAGER_REMOVED")


def test_si5_ny_initial_collected_at_the_war_decision() -> None:
    """§(i)(5): under ny the whole initial wager goes to the chip tray at the decision."""
    t = _dealing(NY, p1=(1000, None, 1000))
    t.cards(["9H", "9S"])
    t.ok("WAR", "1")
    t.take(1, INITIAL)
    assert not t.alerts("WAGER_REMOVED")
    t.cards(["2H", "2D", "2S", "8H", "8D"])
    # §(i)(5)(ii)(c): on a war tie the initial wager is returned: push, net 0.
    assert t.wager(1, "initial")["result"] == "push"


@pytest.mark.parametrize("rules", [UK, STANDARD], ids=["uk", "standard"])
def test_initial_stands_until_the_war_deal_elsewhere(rules: RulesProfile) -> None:
    t = _dealing(rules, p1=(1000, None, 1000))
    t.cards(["9H", "9S"])
    t.ok("WAR", "1")
    out = t.take(1, INITIAL)
    assert len(t.raised("WAGER_REMOVED", out)) == 1


# ---------------------------------------------------------------- cards


def test_foreign_card_more_copies_than_decks() -> None:
    """A card read more times than the shoe holds; only VOID_ROUND resolves it."""
    t = Table.of(NY, decks=6)
    t.open_shoe()
    for i in range(3):
        t.bets({1: (1000, None, None)})
        t.cards(["AS", "AS"])  # tie... then surrender
        t.ok("SURRENDER", "1")
        assert len(t.records()) == i + 1
    assert not t.alerts("FOREIGN_CARD")
    t.ok("NO_MORE_BETS")
    out = t.card("AS")  # the seventh ace of spades in a six-deck shoe
    (alert,) = t.raised("FOREIGN_CARD", out)
    assert alert.data["severity"] == "critical"
    assert alert.data["position"] == 1
    t.card("2D")
    assert t.press("CONFIRM") == "NOT_NOW"
    assert t.state.held
    t.ok("VOID_ROUND")
    (resolved,) = [e for e in t.alerts("FOREIGN_CARD") if e.data["resolved_by"]]
    assert resolved.data["resolved_by"] == "VOID_ROUND"
    rec = t.record()
    assert rec["void"] is True
    # The foreign card stays recorded where it was dealt.
    assert [c["card"] for c in rec["cards"] if c["role"] == "position"] == ["AS"]
    assert not t.state.held


def test_misread_waits_for_the_card_keyed_in() -> None:
    """MISREAD: the slot waits for CARD,<card>; CONFIRM cannot resolve it."""
    t = _dealing(p1=(1000, None, None))
    out = t.misread()
    (alert,) = t.raised("MISREAD", out)
    assert alert.data["position"] == 1
    (ev,) = t.events("card", out)
    assert ev.data["card"] is None
    t.card("4D")
    assert t.records() == []
    assert t.press("CONFIRM") == "NOT_NOW"
    assert t.press("CARD", "ZZ") == "BAD_CARD"
    t.ok("CARD", "KH")
    (resolved,) = [e for e in t.alerts("MISREAD", t.last) if e.data["resolved_by"]]
    assert resolved.data["resolved_by"] == "CARD"
    rec = t.record()
    (p1,) = [c for c in rec["cards"] if c["role"] == "position"]
    assert (p1["card"], p1["source"]) == ("KH", "manual")
    assert t.wager(1, "initial")["result"] == "win"


def test_card_without_a_misread_is_not_now() -> None:
    t = _dealing()
    assert t.press("CARD", "KH") == "NOT_NOW"


def test_sh1_a_misread_burn_card_needs_no_dealer_and_stays_unknown() -> None:
    """§(h)(1) over docs/rules.md: a burn card's rank is revealed to no one, so no MISREAD."""
    t = Table.of(NY)
    t.ok("SHUFFLED")
    t.bets({1: (1000, None, None)})
    t.ok("NO_MORE_BETS")
    t.misread()
    assert not t.alerts("MISREAD")
    t.cards(["KH", "4D"])
    assert t.record()["cards"][0] == {
        "n": 1,
        "card": None,
        "role": "burn",
        "position": None,
        "source": "shoe",
    }


def test_shoe_read_gap_with_wagers_latched() -> None:
    """docs/rules.md: a gap a resend did not fill is critical; the lost card takes its place in
    the deal as a misread, so the cards after it are not dealt one place off."""
    t = _dealing()  # the burn, 2C, is drawn (§(h)(1))
    out = t.feed(ReadGap(t.at(), t.n + 1, "resend_timeout"))
    t.n += 1
    (alert,) = t.raised("SHOE_READ_GAP", out)
    assert alert.data["severity"] == "critical"
    t.raised("MISREAD", out)  # P1's card left the shoe unseen: the dealer keys it in
    t.card("5D")  # the dealer's card, in the dealer's place
    t.ok("CONFIRM")
    assert t.state.held  # the MISREAD still waits for CARD
    t.ok("CARD", "KH")
    assert not t.state.held
    record = t.record()
    assert record["dealer_card"] == "5D"
    assert [(c["card"], c["role"], c["source"]) for c in record["cards"]] == [
        ("2C", "burn", "shoe"),
        ("KH", "position", "manual"),
        ("5D", "dealer", "shoe"),
    ]


def test_shoe_read_gap_between_rounds_is_critical_and_takes_the_burn() -> None:
    """docs/rules.md lists SHOE_READ_GAP whatever the phase; a lost read with a burn due is that
    burn, unseen (§(h)(1)), so the deal that follows starts with the right card."""
    t = Table.of(NY)
    t.ok("SHUFFLED")  # a burn card is due (§(h)(1))
    out = t.feed(ReadGap(t.at(), t.n + 1, "resend_timeout"))
    t.n += 1
    (alert,) = t.raised("SHOE_READ_GAP", out)
    assert alert.data["severity"] == "critical"
    assert {e.data["code"] for e in out if isinstance(e, Event) and e.type == "alert"} == {
        "SHOE_READ_GAP"
    }
    t.ok("CONFIRM")
    assert not t.state.held
    assert t.state.shoe.burns_due == 0


def test_shoe_reboot_restarts_the_read_numbers() -> None:
    t = _dealing(p1=(1000, None, None))
    t.card("KH")
    assert t.state.last_read_n == 2
    t.feed(ReadGap(t.at(), 1, "shoe_rebooted"))
    assert t.state.last_read_n == 0
    t.ok("CONFIRM")
    t.n = 0
    t.card("4D")
    assert t.record()["dealer_card"] == "4D"


def test_unexpected_card_during_the_tie_decision() -> None:
    t = _dealing(p1=(1000, None, None))
    t.cards(["9H", "9S"])
    out = t.card("KD")
    (alert,) = t.raised("UNEXPECTED_CARD", out)
    assert alert.data["severity"] == "critical"
    assert t.state.round.discards[-1] == (t.n, "KD")
    t.put(1, WAR, 1000)
    assert t.press("WAR", "1") == "NOT_NOW", "no decision while held"
    t.ok("CONFIRM")
    t.ok("WAR", "1")


def test_unexpected_card_with_no_playing_position() -> None:
    t = Table.of(NY)
    t.open_shoe()
    out = t.card("KD")
    assert len(t.raised("UNEXPECTED_CARD", out)) == 1
    assert t.phase() is Phase.BETTING


def test_repeated_read_number_is_ignored() -> None:
    t = _dealing(p1=(1000, None, None))
    t.card("KH")
    t.n -= 1
    assert t.card("QH") == []
    assert t.state.stats.duplicate_reads == 1


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


# ---------------------------------------------------------------- resolution


def test_confirm_with_nothing_to_resolve_is_not_now() -> None:
    t = Table.of(NY)
    assert t.press("CONFIRM") == "NOT_NOW"


def test_confirm_resolves_every_confirmable_alert_at_once() -> None:
    t = _dealing(p1=(1000, None, None), p2=(1000, None, None))
    t.put(1, INITIAL, 2000)
    t.take(2, INITIAL)
    t.misread()
    assert len(t.state.alerts.open) == 3
    t.ok("CONFIRM")
    assert [a.code.value for a in t.state.alerts.open] == ["MISREAD"]
    resolved = [e.data["code"] for e in t.alerts() if e.data["resolved_by"] == "CONFIRM"]
    assert sorted(resolved) == ["PAST_POSTING", "WAGER_REMOVED"]


def test_void_round_voids_every_latched_wager() -> None:
    t = _dealing(p1=(1000, 200, None), p2=(500, None, None))
    t.card("KH")
    t.ok("VOID_ROUND")
    rec = t.record()
    assert rec["void"] is True
    assert rec["void_reason"]
    for pos in rec["positions"]:
        for w in pos["wagers"]:
            assert (w["result"], w["net_per_unit"], w["net"]) == ("void", 0, 0)
    assert rec["net"] == 0
    assert len(t.events("round_voided")) == 1
    assert t.state.round_id == 2
    assert t.phase() is Phase.BETTING
    assert t.state.stats.voids == 1


def test_void_round_presence_only_nets_are_null() -> None:
    t = Table.of(NY, rfid=False)
    t.open_shoe()
    t.bets({1: (100, None, None)})
    t.ok("NO_MORE_BETS")
    t.ok("VOID_ROUND")
    (w,) = t.record()["positions"][0]["wagers"]
    assert (w["amount"], w["net_per_unit"], w["net"]) == (None, 0, None)


def test_void_round_with_nothing_in_play_is_not_now() -> None:
    t = Table.of(NY)
    t.ok("SHUFFLED")
    assert t.press("VOID_ROUND") == "NOT_NOW"


def test_alert_ids_are_unique_and_listed_in_the_round() -> None:
    t = _dealing(p1=(1000, None, None))
    t.put(3, INITIAL, 500)  # LATE_WAGER
    t.put(1, INITIAL, 2000)  # PAST_POSTING
    t.ok("CONFIRM")
    t.cards(["KH", "4D"])
    ids = [e.data["alert"] for e in t.alerts() if e.data["resolved_by"] is None]
    assert len(set(ids)) == len(ids) == 2
    assert t.record()["alerts"] == ids


def test_open_alerts_in_the_state_view() -> None:
    t = _dealing(p1=(1000, None, None))
    t.put(1, INITIAL, 2000)
    view = state_view(t.state)
    assert view["held"] is True
    (a,) = view["open_alerts"]
    assert (a["code"], a["severity"]) == ("PAST_POSTING", "critical")


def test_input_time_window_for_broker_refusals_uses_input_time_only() -> None:
    t = Table.of(NY)
    start = t.at()
    t.feed(PublishRefused(start, "x/state", 0x80, "a"))
    t.feed(PublishRefused(start + timedelta(seconds=59), "x/state", 0x80, "b"))
    t.feed(PublishRefused(start + timedelta(seconds=60), "x/state", 0x80, "c"))
    assert len(t.raised("BROKER_REFUSED")) == 2


def test_void_round_while_the_shuffle_is_due_keeps_it_due() -> None:
    t = Table.of(NY)
    t.card("KH")  # no shoe yet: set aside, UNEXPECTED_CARD
    t.ok("VOID_ROUND")
    assert t.phase() is Phase.SHUFFLE_DUE
    assert not t.state.held
    assert t.press("NO_MORE_BETS") == "NOT_NOW"
