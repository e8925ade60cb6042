"""The amended rules of docs/rules.md: never settle on what the devices cannot vouch for.

Each test names the clause it checks and the case of the review it answers
(the cases were reproduced on the engine before the amendment).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from table_controller.engine import (
    DeviceName,
    DeviceOffline,
    DeviceOnline,
    ShoeStatus,
    state_view,
)
from table_controller.engine.rules import NY, UK

from .helpers import INITIAL, TIE, WAR, Table, bit


def _online(rules: Any = NY, **kwargs: Any) -> Table:
    t = Table.of(rules, **kwargs)
    devices: tuple[DeviceName, ...] = ("shoe", "sensors", "console")
    for device in devices:
        t.feed(DeviceOnline(t.at(), device))
    t.open_shoe()
    return t


def _latched(rules: Any = NY, **bets: tuple[int | None, ...]) -> Table:
    t = _online(rules)
    t.bets({int(k[1:]): v for k, v in bets.items()} or {1: (50000, None, None)})
    t.ok("NO_MORE_BETS")
    return t


def _live_texts(t: Table) -> str:
    """Everything the live feeds carry: events, alerts (with messages) and the state view."""
    return json.dumps([dict(e.data) for e in t.events()] + [state_view(t.state)])


# ------------------------------------------------------------ case 1: latched comparisons


def test_case1_a_value_less_snapshot_is_wager_unverified() -> None:
    """docs/rules.md "latched amount", §(g)(2): a value unknown in action is WAGER_UNVERIFIED."""
    t = _latched(p1=(50000, None, None))
    t.rfid = False  # one snapshot without values, as after a reconnect
    out = t.snapshot()
    (alert,) = t.raised("WAGER_UNVERIFIED", out)
    assert (alert.data["severity"], alert.data["position"], alert.data["spot"]) == (
        "critical",
        1,
        "initial",
    )
    assert t.state.held


def test_case1_a_lowered_wager_across_a_value_less_snapshot_is_caught() -> None:
    """docs/rules.md: compared with the latched amount, never only with the previous snapshot."""
    t = _latched(p1=(50000, None, None))
    t.rfid = False
    t.snapshot()
    t.rfid = True
    out = t.put(1, INITIAL, 500)
    (removed,) = t.raised("WAGER_REMOVED", out)
    assert "500" in removed.data["message"]
    t.cards(["KH", "4D"])
    assert t.records() == [], "never settled while the change is unanswered"
    t.ok("CONFIRM")
    # docs/rules.md: after a confirmed WAGER_REMOVED the wager settles at its latched amount.
    assert t.wager(1, "initial")["amount"] == 50000


def test_case1_a_change_in_two_snapshots_is_still_caught() -> None:
    """docs/rules.md: a change that arrives in several snapshots is caught against the latch."""
    t = _latched(p1=(50000, None, None))
    t.chips[bit(1, INITIAL)] = None  # the value goes missing, the chips stay
    t.snapshot()
    t.ok("CONFIRM")
    out = t.put(1, INITIAL, 500)
    assert t.raised("WAGER_REMOVED", out)


def test_case1_unverified_resolves_itself_when_the_latched_amount_shows_again() -> None:
    """docs/rules.md: WAGER_UNVERIFIED resolves itself, resolved_by SNAPSHOT."""
    t = _latched(p1=(50000, None, None))
    t.rfid = False
    t.snapshot()
    t.rfid = True
    out = t.snapshot()
    (resolved,) = [e for e in t.alerts("WAGER_UNVERIFIED", out) if e.data["resolved_by"]]
    assert resolved.data["resolved_by"] == "SNAPSHOT"
    assert not t.state.held
    t.cards(["KH", "4D"])
    assert t.wager(1, "initial")["net"] == 50000


def test_case1_a_board_back_mid_round_counts_as_back_after_a_complete_snapshot() -> None:
    """docs/rules.md: DEVICE_ONLINE alone does not end the hold while wagers are in action."""
    t = _latched(p1=(50000, None, None))
    t.feed(DeviceOffline(t.at(), "sensors", "link closed"))
    # Meanwhile the chips are swapped for a $5 one.
    t.chips[bit(1, INITIAL)] = 500
    out = t.feed(DeviceOnline(t.at(), "sensors"))
    assert not t.alerts(out=out)
    assert t.state.held
    t.rfid = False  # the driver's first heartbeat after a reconnect: no values
    out = t.snapshot()
    assert t.raised("WAGER_UNVERIFIED", out)
    assert t.state.held
    t.rfid = True
    out = t.snapshot()
    assert t.raised("WAGER_REMOVED", out)
    (back,) = [e for e in t.alerts("DEVICE_OFFLINE", out) if e.data["resolved_by"]]
    assert back.data["resolved_by"] == "DEVICE_ONLINE"
    assert t.raised("DEVICE_ONLINE", out)
    assert t.state.held, "the change still needs the dealer"
    t.cards(["KH", "4D"])
    assert t.records() == []


@pytest.mark.parametrize("spot", [WAR, TIE])
def test_case1_a_war_deal_wager_of_unknown_value_is_wager_unverified(spot: int) -> None:
    """docs/rules.md "never settle on uncertain data": the war wager and, under NY, the tie
    wager on the war deal (§(i)(5)) alike, when the board reports no value for them."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (1000, None, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["5C", "5D"])  # a tie
    t.put(1, WAR, None if spot == WAR else 1000)
    t.put(1, TIE, None if spot == TIE else 200)
    t.ok("WAR", "1")
    (alert,) = t.raised("WAGER_UNVERIFIED")
    assert alert.data["spot"] == ("war" if spot == WAR else "tie")
    assert t.state.held
    t.ok("CONFIRM")
    t.cards(["2C", "3C", "4C", "KC", "KD"])  # the burns, and a tie on the war deal
    assert t.records()


# ------------------------------------------------------------ case 2: the war wager


def test_case2_sg2_the_war_wager_is_guarded_from_the_war_press() -> None:
    """docs/rules.md rule 5, §(g)(2): chips added to the war spot after WAR are PAST_POSTING."""
    t = _latched(UK, p1=(1000, None, None), p2=(1000, None, None))
    t.cards(["9H", "9D", "9C"])  # both tie: P2 still decides after P1's WAR
    t.put(1, WAR, 1000)
    t.ok("WAR", "1")
    out = t.put(1, WAR, 5000)
    (alert,) = t.raised("PAST_POSTING", out)
    assert alert.data["spot"] == "war"
    t.ok("CONFIRM")
    t.ok("SURRENDER", "2")
    t.cards(["2H", "2D", "2S", "KH", "5C"])
    assert t.wager(1, "war")["amount"] == 1000


# ------------------------------------------------------------ case 4: DEALER again


def test_case4_sh1_the_signed_in_dealer_signing_in_again_burns_nothing() -> None:
    """docs/rules.md rule 1, §(h)(1): DEALER naming the dealer signed in is a no-op."""
    t = _online()
    assert t.state.shoe.burns_due == 0
    out = t.press("DEALER", "D-1")
    assert out is None
    assert t.state.shoe.burns_due == 0
    assert not t.events("dealer_changed", t.last)
    t.bets({1: (500, None, None)})
    t.cards(["KH", "4D"])
    rec = t.record()
    # The shoe's burn card (drawn by open_shoe) and then the deal: no second burn.
    assert [c["role"] for c in rec["cards"]] == ["burn", "position", "dealer"]
    assert rec["positions"][0]["card"] == "KH"


# ------------------------------------------------------------ case 5: a faulty sensor


def test_case5_sh3_a_faulty_initial_sensor_at_the_latch_closes_the_position() -> None:
    """docs/rules.md rule 3: critical SENSOR_FAULT before the first card, SHOW, CONFIRM resolves."""
    t = _online()
    t.bets({1: (500, None, None), 2: (500, None, None), 3: (500, None, None)})
    t.fault(2, INITIAL)
    out = t.press("NO_MORE_BETS")
    assert out is None
    (fault,) = t.raised("SENSOR_FAULT", t.last)
    assert (fault.data["severity"], fault.data["position"]) == ("critical", 2)
    assert "P2 closed: sensor fault" in t.shows()
    # docs/rules.md rule 2: the order of the deal, and the spots in play lit.
    assert "deal P1 P3 D" in t.shows()
    assert t.lights()[-1] == (1 << bit(1, INITIAL)) | (1 << bit(3, INITIAL))
    assert t.state.held
    t.ok("CONFIRM")
    t.cards(["KH", "QH", "4D"])
    rec = t.record()
    assert [p["position"] for p in rec["positions"]] == [1, 3]
    assert [(c["card"], c["position"]) for c in rec["cards"]] == [
        ("2C", None),
        ("KH", 1),
        ("QH", 3),
        ("4D", None),
    ]
    # The lights go out once the dealer's card is placed.
    assert 0 in t.lights()


def test_case5_a_faulty_initial_sensor_voids_the_tie_wager_with_it() -> None:
    """docs/rules.md rule 3: a closed position is not in action: its tie wager is void with it."""
    t = _online()
    t.bets({1: (500, None, None), 2: (500, 100, None)})
    t.fault(2, INITIAL)
    t.ok("NO_MORE_BETS")
    t.ok("CONFIRM")
    t.cards(["KH", "4D"])
    assert [p["position"] for p in t.record()["positions"]] == [1]


# ------------------------------------------------------------ case 6: board offline


def test_case6_sh2_no_more_bets_is_refused_while_the_board_is_offline() -> None:
    """docs/rules.md rule 2: NO_MORE_BETS gets NAK DEVICE_OFFLINE while the board is offline."""
    t = _online()
    t.bets({1: (500, None, None)})
    t.feed(DeviceOffline(t.at(), "sensors", "link closed"))
    assert t.press("NO_MORE_BETS") == "DEVICE_OFFLINE"
    assert not t.state.round.latched
    # Back, but the layout known is still the one from before: P1 took the bet back and
    # P2 bet meanwhile. Not latched from it, and not back until its first snapshot.
    out = t.feed(DeviceOnline(t.at(), "sensors"))
    assert not t.raised("DEVICE_ONLINE", out)
    assert t.press("NO_MORE_BETS") == "DEVICE_OFFLINE"
    out = t.bets({2: (1000, None, None)})
    assert t.raised("DEVICE_ONLINE", out)
    t.ok("NO_MORE_BETS")
    assert [h.position for h in t.state.round.hands] == [2]


# ------------------------------------------------------------ case 7: shoe faults


@pytest.mark.parametrize("state", ["DOOR_OPEN", "JAM", "FAULT"])
def test_case7_a_shoe_fault_while_latched_holds_the_round(state: str) -> None:
    """docs/rules.md SHOE_FAULT: critical; CONFIRM only once the shoe reports OK again."""
    t = _latched(p1=(1000, None, None))
    out = t.feed(ShoeStatus(t.at(), state))
    (alert,) = t.raised("SHOE_FAULT", out)
    assert alert.data["severity"] == "critical"
    t.cards(["KH", "4D"])
    assert t.records() == []
    assert t.press("CONFIRM") == "NOT_NOW"
    t.feed(ShoeStatus(t.at(), "OK"))
    t.ok("CONFIRM")
    assert len(t.records()) == 1


def test_case7_a_shoe_fault_between_rounds_raises_nothing() -> None:
    """docs/rules.md SHOE_FAULT: only while wagers are latched."""
    t = _online()
    out = t.feed(ShoeStatus(t.at(), "DOOR_OPEN"))
    assert not t.alerts(out=out)


@pytest.mark.parametrize("latched_by", ["NO_MORE_BETS", "first card"])
def test_case7_a_shoe_still_faulty_at_the_latch_holds_the_round(latched_by: str) -> None:
    """docs/rules.md SHOE_FAULT: a shoe whose fault began in betting and is still reported
    when the wagers are latched holds the round before it is settled; CONFIRM once OK."""
    t = _online()
    t.bets({1: (1000, None, None)})
    t.feed(ShoeStatus(t.at(), "DOOR_OPEN"))
    assert not t.state.held
    if latched_by == "NO_MORE_BETS":
        t.ok("NO_MORE_BETS")
        out = t.last
    else:
        out = t.card("KH")
    assert t.state.round.latched
    (alert,) = t.raised("SHOE_FAULT", out)
    assert alert.data["severity"] == "critical"
    assert "DOOR_OPEN" in alert.data["message"]
    t.cards(["KH", "4D"] if latched_by == "NO_MORE_BETS" else ["4D"])
    assert t.records() == []
    assert t.press("CONFIRM") == "NOT_NOW"
    assert not t.raised("SHOE_FAULT", t.feed(ShoeStatus(t.at(), "OK")))
    t.ok("CONFIRM")
    assert len(t.raised("SHOE_FAULT")) == 1
    assert t.record()["void"] is False


def test_case7_a_void_round_leaves_a_faulty_shoe_to_hold_the_next_round() -> None:
    """docs/rules.md SHOE_FAULT: VOID_ROUND ends the round, not the fault: the shoe still
    reporting JAM at the next latch holds that round too."""
    t = _latched(p1=(1000, None, None))
    t.feed(ShoeStatus(t.at(), "JAM"))
    assert t.press("CONFIRM") == "NOT_NOW"
    t.ok("VOID_ROUND")
    assert not t.state.held
    t.ok("NO_MORE_BETS")
    (alert,) = t.raised("SHOE_FAULT", t.last)
    assert alert.data["round_id"] == t.state.round_id
    t.cards(["KH", "4D"])
    assert [r["void"] for r in t.records()] == [True]
    t.feed(ShoeStatus(t.at(), "OK"))
    t.ok("CONFIRM")
    assert [r["void"] for r in t.records()] == [True, False]


# ------------------------------------------------------------ case 8: no rank on live feeds


def test_case8_sh1_an_unexpected_card_names_no_rank_on_any_live_feed() -> None:
    """docs/rules.md, §(h)(1): an UNEXPECTED_CARD may be a burn: no rank on any live feed."""
    t = _latched(p1=(1000, None, None))
    t.cards(["7H", "7S"])  # a tie: no card is due in tie_decision
    out = t.card("QD")
    (alert,) = t.raised("UNEXPECTED_CARD", out)
    assert "QD" not in alert.data["message"]
    assert "QD" not in _live_texts(t)
    t.ok("CONFIRM")
    t.ok("SURRENDER", "1")
    # Only the round record holds it.
    assert t.record()["discards"] == [{"n": 4, "card": "QD"}]


# ------------------------------------------------------------ case 10: SKIP


def test_case10_sh3iii_skip_moves_the_cards_one_place_on() -> None:
    """docs/rules.md rule 3, §(h)(3)(iii): SKIP,<pos> voids its wagers; cards move one place on."""
    t = _latched(p1=(1000, None, None), p2=(1000, 100, None), p3=(1000, None, None))
    t.cards(["KH", "QH"])  # the dealer gave P2 no card: QH went to P3
    assert t.press("SKIP", "2") is None
    moved = [e.data for e in t.events("card", t.last)]
    assert [(d["n"], d["role"], d["position"], d.get("moved")) for d in moved] == [
        (3, "position", 3, True)
    ]
    t.card("4D")
    rec = t.record()
    by_position = {p["position"]: p for p in rec["positions"]}
    assert by_position[3]["card"] == "QH"
    assert by_position[2]["card"] is None
    assert {w["result"] for w in by_position[2]["wagers"]} == {"void"}
    assert by_position[2]["net"] == 0
    assert rec["dealer_card"] == "4D"


def test_case10_skip_of_the_last_position_makes_its_card_the_dealers() -> None:
    """docs/rules.md rule 3: the last moved card becomes the dealer's when that is next due."""
    t = _latched(p1=(1000, None, None), p2=(1000, None, None))
    t.cards(["KH", "4D"])  # P2 was skipped: 4D is the dealer's card
    assert t.press("SKIP", "2") is None
    rec = t.record()
    assert rec["dealer_card"] == "4D"
    assert t.wager(1, "initial")["result"] == "win"
    assert t.wager(2, "initial")["result"] == "void"


def test_case10_skip_only_during_the_original_deal() -> None:
    """docs/rules.md rule 3: before the dealer's card has been placed; a playing position only."""
    t = _latched(p1=(1000, None, None), p2=(1000, None, None))
    assert t.press("SKIP", "5") == "BAD_POSITION"
    t.cards(["KH", "QH", "4D"])
    assert t.press("SKIP", "2") == "NOT_NOW"


# ------------------------------------------------------------ case 11: NO_MORE_BETS_MISSING


def test_case11_sh2_dealing_without_no_more_bets_warns_under_ny() -> None:
    """docs/rules.md rule 2, §(h)(2): under ny the first card before NO_MORE_BETS is a warning."""
    t = _online(NY)
    t.bets({1: (1000, None, None)})
    out = t.card("KH")
    (alert,) = t.raised("NO_MORE_BETS_MISSING", out)
    assert alert.data["severity"] == "warning"
    assert not t.state.held
    u = _online(UK)
    u.bets({1: (1000, None, None), 2: (None, 100, None)})
    assert not u.raised("NO_MORE_BETS_MISSING", u.card("KH"))
