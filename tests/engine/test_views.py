"""The publisher's views: table-state, table-stats and device states (JSON-ready)."""

from __future__ import annotations

import json

from table_controller.engine import (
    DeviceOnline,
    RoundEngine,
    device_states,
    spot_bit,
    state_view,
    stats_view,
)
from table_controller.engine.domain import BURN_ROLES
from table_controller.engine.rules import NY
from table_controller.engine.views import card_json

from .helpers import INITIAL, TIE, WAR, Table, random_session


def test_state_view_during_a_war() -> None:
    t = Table.of(NY, positions=3)
    t.feed(DeviceOnline(t.at(), "shoe"))
    t.ok("SHUFFLED")
    t.ok("DEALER", "D-114")
    t.bets({1: (2500, 500, None), 3: (1000, None, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["9C", "7H", "KD", "7S"])
    t.put(1, WAR, 2500)
    t.ok("WAR", "1")
    t.cards(["2H", "3H"])
    view = state_view(t.state)
    json.dumps(view)
    assert view["phase"] == "war_dealing"
    assert view["round_id"] == 1
    assert view["held"] is False
    assert view["dealer"] == "D-114"
    assert view["shoe"] == {
        "id": t.state.shoe.id,
        "cards_read": 6,
        "cover_seen": False,
        "burn_due": False,
    }
    # §(h)(1): burn cards as a count, never a rank.
    assert view["burns"] == 3
    assert "9C" not in json.dumps(view)
    assert view["dealer_card"] == "7S"
    assert view["dealer_war_card"] is None
    p1 = view["positions"][0]
    assert p1["position"] == 1
    assert p1["wagers"]["initial"] == {"present": True, "amount": 2500}
    assert p1["wagers"]["war"] == {"present": True, "amount": 2500}
    assert p1["wagers"]["war_tie"] == {"present": True, "amount": 500}
    assert [c["card"] for c in p1["cards"]] == ["7H"]
    assert view["positions"][1]["wagers"]["initial"] == {"present": False, "amount": None}
    assert view["open_alerts"] == []


def test_stats_view_counts_rounds_and_money() -> None:
    t = Table.of(NY, positions=2)
    t.open_shoe()
    t.bets({1: (1000, 100, None), 2: (500, None, None)})
    t.cards(["KH", "3H", "8D"])  # P1 wins 1000, loses tie 100; P2 loses 500
    t.cards(["9H", "4H", "9S"])  # P1 ties: tie wins 1000; P2 loses 500
    t.ok("SURRENDER", "1")  # P1 loses 500
    t.put(2, INITIAL, 700)
    t.ok("NO_MORE_BETS")
    t.ok("VOID_ROUND")
    stats = stats_view(t.state)
    json.dumps(stats)
    assert stats["rounds"] == 2
    assert stats["ties"] == 1
    assert stats["surrenders"] == 1
    assert stats["wars"] == 0
    assert stats["voids"] == 1
    assert stats["drop"] == (1000 + 100 + 500) * 2
    players = (1000 - 100 - 500) + (1000 - 500 - 500)
    assert stats["win"] == -players
    assert stats["rounds_per_hour"] is not None
    assert stats["rounds_per_hour"] > 0


def test_stats_without_amounts() -> None:
    t = Table.of(NY, rfid=False)
    t.open_shoe()
    t.bets({1: (100, None, None)})
    t.cards(["KH", "3H"])
    assert stats_view(t.state)["drop"] is None
    assert stats_view(t.state)["win"] is None


def test_views_after_a_long_session_are_json() -> None:
    t = random_session(NY, 3, rounds=15)
    for view in (state_view(t.state), stats_view(t.state), device_states(t.state)):
        json.loads(json.dumps(view))
    by_code = stats_view(t.state)["alerts_by_code"]
    raised = [e for e in t.alerts() if e.data["resolved_by"] is None]
    assert sum(by_code.values()) == len(raised)


def test_the_state_view_says_what_the_snapshot_holds_after_every_input() -> None:
    session = random_session(NY, 11, rounds=25, positions=7)
    engine = RoundEngine(session.engine.setup)
    checked_cards = 0
    for inp in session.inputs:
        engine.feed(inp)
        snap = engine.snapshot()
        view = state_view(snap)
        rnd = snap.round
        for pos in view["positions"]:
            p = pos["position"]
            for name, spot in (("initial", INITIAL), ("tie", TIE), ("war", WAR)):
                bit = spot_bit(p, spot)
                present = bool(snap.spots.present >> bit & 1)
                assert pos["wagers"][name] == {"present": present, "amount": snap.spots.value(bit)}
            hand = rnd.hand(p)
            war_tie = None if hand is None else hand.war_tie
            assert pos["wagers"]["war_tie"] == {
                "present": war_tie is not None,
                "amount": None if war_tie is None else war_tie.amount,
            }
            shown = [c for c in rnd.cards if c.position == p and c.role not in BURN_ROLES]
            assert pos["cards"] == [card_json(c) for c in shown]
            checked_cards += len(shown)
        assert view["burns"] == sum(1 for c in rnd.cards if c.role in BURN_ROLES)
        assert [pos["position"] for pos in view["positions"]] == list(range(1, 8))
    assert checked_cards > 100
