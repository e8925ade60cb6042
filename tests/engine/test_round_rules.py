"""The round as a state machine, clause by clause (docs/rules.md, 9 NYCRR §5324.22): the
shuffle, burns and dealers, the latch, the deal order and the original deal's settlement."""

from __future__ import annotations

from dataclasses import replace

import pytest

from table_controller.engine import Phase, RoundEngine, TableSetup, state_view
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

from .helpers import Table

PROFILES = [pytest.param(p, id=p.name.value) for p in (NY, UK, STANDARD)]


def test_a_new_table_waits_for_a_shuffle() -> None:
    state = RoundEngine(TableSetup(NY, 6, 7)).snapshot()
    assert state.phase is Phase.SHUFFLE_DUE
    assert state.held is False
    assert state.last_read_n == 0


def test_sh1_shuffled_starts_a_shoe_with_one_burn_due() -> None:
    """§(h)(1): before the first round of a shoe one card is burned."""
    t = Table.of(NY)
    t.ok("SHUFFLED")
    assert t.phase() is Phase.BETTING
    assert t.state.shoe.burns_due == 1
    started = t.events("shoe_started")
    assert len(started) == 1
    assert started[0].data["shoe_id"] == t.state.shoe.id
    assert state_view(t.state)["shoe"]["burn_due"] is True


def test_sh1_burn_is_drawn_by_the_next_card_and_dealt_to_no_one() -> None:
    """§(h)(1): the burn card goes face down to the discard rack, rank revealed to no one."""
    t = Table.of(NY)
    t.ok("SHUFFLED")
    t.bets({1: (500, None, None)})
    t.ok("NO_MORE_BETS")
    out = t.card("9C")
    (ev,) = t.events("card", out)
    assert ev.data == {"n": 1, "card": None, "role": "burn", "position": None, "source": "shoe"}
    assert state_view(t.state)["burns"] == 1
    assert "9C" not in str(state_view(t.state))
    t.cards(["5H", "4D"])
    rec = t.record()
    # Only the round record holds the burn card's rank.
    assert rec["cards"][0] == {
        "n": 1,
        "card": "9C",
        "role": "burn",
        "position": None,
        "source": "shoe",
    }
    assert t.position(1)["card"] == "5H"
    assert rec["dealer_card"] == "4D"


def test_sh1_new_shoe_and_new_dealer_before_one_deal_burn_once() -> None:
    """§(h)(1), docs/rules.md: the due burn is a flag, not a count."""
    t = Table.of(NY)
    t.ok("SHUFFLED")
    t.ok("DEALER", "D-7")
    assert t.state.dealer == "D-7"
    assert t.state.shoe.burns_due == 1
    t.bets({1: (500, None, None)})
    t.cards(["9C", "5H", "4D"])
    rec = t.record()
    assert [c["role"] for c in rec["cards"]] == ["burn", "position", "dealer"]
    assert rec["dealer"] == "D-7"


def test_sh1_a_new_dealer_between_rounds_burns_one_card() -> None:
    """§(h)(1): each new dealer discards one burn card before dealing."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.cards(["5H", "4D"])
    assert len(t.records()) == 1
    t.ok("DEALER", "D-2")
    assert len(t.events("dealer_changed")) == 2
    t.cards(["AS", "6H", "3D"])
    rec = t.record()
    assert [c["role"] for c in rec["cards"]] == ["burn", "position", "dealer"]
    assert rec["cards"][0]["card"] == "AS"


def test_sh1_burn_new_shoe_from_the_profile() -> None:
    """The profile's burn_new_shoe says how many cards that burn is."""
    rules = replace(NY, burn_new_shoe=2)
    t = Table.of(rules)
    t.ok("SHUFFLED")
    t.bets({1: (500, None, None)})
    t.cards(["9C", "9D", "5H", "4D"])
    assert [c["role"] for c in t.record()["cards"]] == ["burn", "burn", "position", "dealer"]


@pytest.mark.parametrize("cover", [True, False], ids=["after-the-cover", "before-it"])
def test_sh1_a_burn_of_the_old_shoe_stays_with_the_old_shoe(cover: bool) -> None:
    """§(h)(1): the new shoe's first round burns its own first card. A new dealer's burn
    drawn from the old shoe before its shuffle is recorded with the old shoe, in a round
    of its own that was never dealt, not in the new shoe's first round."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.cards(["5H", "4D"])
    old_shoe = t.state.shoe.id
    t.ok("DEALER", "D-2")
    t.card("AS")  # the new dealer's burn, from the old shoe
    if cover:
        t.cover()
        assert t.phase() is Phase.SHUFFLE_DUE
    t.ok("SHUFFLED")
    assert t.state.shoe.id != old_shoe
    t.bets({1: (500, None, None)})
    t.cards(["9C", "6H", "3D"])
    *_, burned, first = t.records()
    assert burned["shoe_id"] == old_shoe
    assert [(c["card"], c["role"]) for c in burned["cards"]] == [("AS", "burn")]
    assert burned["void_reason"] is not None
    assert not burned["positions"]
    assert first["shoe_id"] == t.state.shoe.id
    assert [(c["card"], c["role"]) for c in first["cards"]] == [
        ("9C", "burn"),
        ("6H", "position"),
        ("3D", "dealer"),
    ]
    (voided,) = t.events("round_voided")
    assert voided.round_id == burned["round_id"]


def test_sh4_a_card_read_after_the_shoe_ended_stays_with_that_shoe() -> None:
    """§(h)(4): after the cover card's round the cards are reshuffled. A card read before
    the shuffle is set aside (UNEXPECTED_CARD) and recorded with the shoe it came from."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.card("5H")
    t.cover()
    t.card("4D")
    assert t.phase() is Phase.SHUFFLE_DUE
    old_shoe = t.state.shoe.id
    assert t.raised("UNEXPECTED_CARD", t.card("KS"))
    t.ok("CONFIRM")
    t.ok("SHUFFLED")
    t.bets({1: (500, None, None)})
    t.cards(["9C", "6H", "3D"])
    *_, set_aside, first = t.records()
    assert set_aside["shoe_id"] == old_shoe
    assert [d["card"] for d in set_aside.get("discards", [])] == ["KS"]
    assert set_aside["void_reason"] is not None
    assert not set_aside["positions"]
    assert "discards" not in first
    assert [c["card"] for c in first["cards"]] == ["9C", "6H", "3D"]


@pytest.mark.parametrize("action", ["SHUFFLED", "DEALER"])
def test_sh1_shuffle_and_dealer_only_between_rounds(action: str) -> None:
    """docs/rules.md 1: SHUFFLED and DEALER are refused NOT_NOW once wagers are latched."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.ok("NO_MORE_BETS")
    arg = "D-9" if action == "DEALER" else None
    assert t.press(action, arg) == "NOT_NOW"
    t.cards(["5H", "4D"])
    assert t.press(action, arg) is None


def test_sh2_no_more_bets_latches_the_wagers() -> None:
    """§(h)(2): no more bets; chips on the initial spots then are the playing positions."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None), 3: (1000, 100, None), 5: (None, 200, None)})
    t.ok("NO_MORE_BETS")
    assert t.phase() is Phase.DEALING
    (closed,) = t.events("bets_closed")
    assert closed.data == {"by": "no_more_bets", "positions": [1, 3]}
    assert t.press("NO_MORE_BETS") == "NOT_NOW"


def test_sh2_the_first_card_latches_when_no_more_bets_was_not_pressed() -> None:
    """UK outline: no bet after the first card is dealt."""
    t = Table.of(UK)
    t.open_shoe()
    t.bets({2: (500, None, None)})
    t.card("5H")
    (closed,) = t.events("bets_closed")
    assert closed.data == {"by": "first_card", "positions": [2]}
    assert t.phase() is Phase.DEALING


def test_sh2_no_more_bets_with_no_wager_is_refused() -> None:
    t = Table.of(NY)
    t.open_shoe()
    assert t.press("NO_MORE_BETS") == "NO_WAGERS"
    assert t.phase() is Phase.BETTING


def test_sh3_deal_order_positions_ascending_then_dealer() -> None:
    """§(h)(3)(i)-(ii): from the dealer's left (position 1) around, then the dealer."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({6: (500, None, None), 2: (500, None, None), 4: (500, None, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["KH", "QH", "JH", "3D"])
    rec = t.record()
    roles = [(c["role"], c["position"], c["card"]) for c in rec["cards"]]
    assert roles == [
        ("burn", None, "2C"),
        ("position", 2, "KH"),
        ("position", 4, "QH"),
        ("position", 6, "JH"),
        ("dealer", None, "3D"),
    ]


def test_sh3iii_a_tie_wager_without_initial_wager_is_void() -> None:
    """§(h)(3)(iii): no card is dealt to it; the tie wager is void."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None), 2: (None, 300, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["5H", "5D"])  # position 1 ties: decide
    t.ok("SURRENDER", "1")
    p2 = t.position(2)
    assert p2["card"] is None
    assert p2["wagers"] == [
        {
            "spot": "tie",
            "amount": 300,
            "odds": "10:1",
            "result": "void",
            "net_per_unit": 0,
            "net": 0,
        }
    ]
    assert [(c["role"], c["position"]) for c in t.record()["cards"]] == [
        ("burn", None),
        ("position", 1),
        ("dealer", None),
    ]


def test_si1_settle_initial_and_tie_wagers() -> None:
    """§(i)(1)(i)-(ii): lower loses initial and tie; higher wins 1:1 and loses the tie."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (1000, 200, None), 2: (700, 100, None)})
    t.cards(["KH", "3H", "8D"])
    assert t.wager(1, "initial")["net"] == 1000
    assert t.wager(1, "tie")["net"] == -200
    assert t.wager(2, "initial")["net"] == -700
    assert t.wager(2, "tie")["net"] == -100
    assert t.position(1)["outcome"] == "win"
    assert t.position(2)["outcome"] == "lose"
    assert t.record()["net"] == 1000 - 200 - 700 - 100
    assert t.phase() is Phase.BETTING
    assert t.state.round_id == 2


@pytest.mark.parametrize("rules", PROFILES)
def test_si1iii_a_tie_wins_the_tie_wager_ten_to_one(rules: RulesProfile) -> None:
    """§(i)(1)(iii), §(j)(2): a tie hand wins the tie wager at 10:1."""
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (1000, 300, None)})
    t.cards(["9H", "9S"])
    assert t.phase() is Phase.TIE_DECISION
    t.ok("SURRENDER", "1")
    tie = t.wager(1, "tie")
    assert (tie["result"], tie["odds"], tie["net_per_unit"]) == ("win", "10:1", 10)
    assert tie["net"] == 3000


@pytest.mark.parametrize("rules", PROFILES)
def test_si1_original_deal_pays_one_to_one_in_every_profile(rules: RulesProfile) -> None:
    """§(i)(1)(ii), §(j)(1): a higher card wins the initial wager at 1:1; lower loses it."""
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (1000, None, None), 2: (1000, None, None)})
    t.cards(["AH", "2H", "7D"])
    win, lose = t.wager(1, "initial"), t.wager(2, "initial")
    assert (win["result"], win["odds"], win["net_per_unit"], win["net"]) == ("win", "1:1", 1, 1000)
    assert (lose["result"], lose["net_per_unit"], lose["net"]) == ("lose", -1, -1000)
