"""The wager alerts of docs/rules.md's table, PAST_POSTING and WAGER_REMOVED: when they
are raised, their severity, how they are resolved; and how any alert is resolved by
CONFIRM or VOID_ROUND."""

from __future__ import annotations

import pytest

from table_controller.engine import Phase, state_view
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

from .helpers import INITIAL, TIE, WAR, Table, _dealing

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


def test_past_posting_raised_again_as_it_changes_and_confirmed_at_once() -> None:
    """docs/rules.md: raised when a spot's difference from its latched amount appears or
    changes; each amount it showed is on the record, and one CONFIRM answers them."""
    t = _dealing(p1=(1000, None, None))
    t.put(1, INITIAL, 1500)
    t.put(1, INITIAL, 1000)  # the latched amount again: nothing new to say
    t.put(1, INITIAL, 2000)
    t.put(1, INITIAL, 2000)  # the same again: not raised again
    t.put(1, INITIAL, 20000)
    raised = t.raised("PAST_POSTING")
    assert [a.data["message"].split()[5] for a in raised] == ["1500", "2000", "20000"]
    t.ok("CONFIRM")
    resolved = [a for a in t.alerts("PAST_POSTING") if a.data["resolved_by"] == "CONFIRM"]
    assert sorted(a.data["alert"] for a in resolved) == sorted(a.data["alert"] for a in raised)


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


def test_void_round_while_the_shuffle_is_due_keeps_it_due() -> None:
    t = Table.of(NY)
    t.card("KH")  # no shoe yet: set aside, UNEXPECTED_CARD
    t.ok("VOID_ROUND")
    assert t.phase() is Phase.SHUFFLE_DUE
    assert not t.state.held
    assert t.press("NO_MORE_BETS") == "NOT_NOW"
