"""The round as a state machine, clause by clause (docs/rules.md, 9 NYCRR §5324.22)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from table_controller.engine import Phase, RoundEngine, TableSetup, state_view
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

from .helpers import INITIAL, TIE, WAR, Table, war_spot_mask

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


def test_si3_tie_decision_lights_the_war_spots_and_asks_the_console() -> None:
    """§(i)(3): each tie hand is offered surrender or war."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None), 2: (500, None, None), 4: (500, None, None)})
    t.cards(["9H", "3C", "9D", "9S"])
    assert t.phase() is Phase.TIE_DECISION
    assert t.lights()[-1] == war_spot_mask(1, 4)
    assert "P1 TIE: WAR OR SURRENDER" in t.shows()
    assert "P4 TIE: WAR OR SURRENDER" in t.shows()
    t.ok("SURRENDER", "1")
    assert t.phase() is Phase.TIE_DECISION
    t.ok("SURRENDER", "4")
    assert t.lights()[-1] == 0
    assert t.phase() is Phase.BETTING


@pytest.mark.parametrize(
    ("arg", "reason"),
    [("2", "BAD_POSITION"), ("9", "BAD_POSITION"), ("x", "BAD_POSITION"), (None, "BAD_POSITION")],
)
def test_si3_decision_for_a_position_not_tied_is_bad_position(arg: str | None, reason: str) -> None:
    t = Table.of(NY, positions=7)
    t.open_shoe()
    t.bets({1: (500, None, None), 2: (500, None, None)})
    t.cards(["9H", "KC", "9S"])
    assert t.press("SURRENDER", arg) == reason
    assert t.press("WAR", arg) == reason


def test_si3_a_position_decides_once() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None), 2: (500, None, None)})
    t.cards(["9H", "9C", "9S"])
    t.ok("SURRENDER", "1")
    assert t.press("WAR", "1") == "BAD_POSITION"
    assert t.press("SURRENDER", "1") == "BAD_POSITION"


def test_si3_decisions_only_in_tie_decision() -> None:
    t = Table.of(NY)
    t.open_shoe()
    assert t.press("SURRENDER", "1") == "NOT_NOW"
    t.bets({1: (500, None, 500)})
    assert t.press("WAR", "1") == "NOT_NOW"


def test_si5_war_refused_without_chips_on_the_war_spot() -> None:
    """§(i)(5): the dealer confirms the placement of the war wager first."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.cards(["9H", "9S"])
    assert t.press("WAR", "1") == "NO_WAR_WAGER"
    t.put(1, WAR, 500)
    t.ok("WAR", "1")
    assert t.phase() is Phase.WAR_DEALING
    (decision,) = t.events("decision")
    assert decision.data == {"position": 1, "decision": "war"}


def test_si5i_three_burns_before_war() -> None:
    """§(i)(5)(i): three burn cards, then a card per war position in order, then the dealer."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None), 3: (500, None, None), 5: (500, None, None)})
    t.cards(["9H", "9C", "KD", "9S"])
    t.put(1, WAR, 500)
    t.put(3, WAR, 500)
    t.ok("WAR", "3")
    t.ok("WAR", "1")
    t.cards(["2H", "2D", "2S", "JH", "4C", "8D"])
    cards = t.record()["cards"]
    assert [(c["role"], c["position"]) for c in cards[5:]] == [
        ("war_burn", None),
        ("war_burn", None),
        ("war_burn", None),
        ("war_position", 1),
        ("war_position", 3),
        ("war_dealer", None),
    ]
    war_burn_events = [e for e in t.events("card") if e.data["role"] == "war_burn"]
    assert [e.data["card"] for e in war_burn_events] == [None, None, None]
    assert t.position(1)["war_card"] == "JH"
    assert t.position(3)["war_card"] == "4C"
    assert t.record()["dealer_war_card"] == "8D"


def test_si5i_burns_before_the_dealer_war_card_from_the_profile() -> None:
    rules = replace(UK, burn_before_war=1, burn_before_dealer_war=2)
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.cards(["9H", "9S"])
    t.put(1, WAR, 500)
    t.ok("WAR", "1")
    t.cards(["2H", "KH", "3D", "3S", "8D"])
    roles = [c["role"] for c in t.record()["cards"][3:]]
    assert roles == ["war_burn", "war_position", "war_burn", "war_burn", "war_dealer"]
    assert t.position(1)["war_outcome"] == "win"


def test_si5_nobody_at_war_ends_the_round() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.cards(["9H", "9S"])
    t.ok("SURRENDER", "1")
    assert t.phase() is Phase.BETTING
    assert t.position(1)["decision"] == "surrender"
    assert len(t.events("round_settled")) == 1


def test_si5_war_wager_is_the_war_spot_value_at_the_press() -> None:
    """docs/rules.md 5: the war wager is the war spot's value when WAR is pressed."""
    t = Table.of(UK)
    t.open_shoe()
    t.bets({1: (500, None, None), 2: (500, None, None)})
    t.cards(["9H", "9C", "9S"])
    t.put(1, WAR, 500)
    t.ok("WAR", "1")
    t.put(2, WAR, 500)
    t.ok("WAR", "2")
    assert not t.alerts("PAST_POSTING")
    t.cards(["2H", "2D", "2S", "KH", "KD", "5C"])
    assert t.wager(1, "war")["amount"] == 500
    assert t.wager(1, "war")["net"] == 500


def test_si5_war_tie_wager_on_the_tie_spot_at_the_last_decision_ny() -> None:
    """§(i)(5): the dealer offers a tie wager on the war deal (ny)."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (1000, None, None)})
    t.cards(["9H", "9S"])
    t.put(1, WAR, 1000)
    t.put(1, TIE, 200)
    t.ok("WAR", "1")
    t.cards(["2H", "2D", "2S", "KH", "KD"])
    war_tie = t.wager(1, "war_tie")
    assert (war_tie["amount"], war_tie["result"], war_tie["net"]) == (200, "win", 2000)


@pytest.mark.parametrize("rules", [pytest.param(p, id=p.name.value) for p in (UK, STANDARD)])
def test_si5_no_war_tie_wager_where_the_profile_forbids_it(rules: RulesProfile) -> None:
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (1000, None, None)})
    t.cards(["9H", "9S"])
    t.put(1, WAR, 1000)
    t.put(1, TIE, 200)
    t.ok("WAR", "1")
    t.cards(["2H", "2D", "2S", "KH", "KD"])
    assert [w["spot"] for w in t.position(1)["wagers"]] == ["initial", "war"]


def test_round_end_chips_left_are_the_next_rounds_wagers() -> None:
    """docs/rules.md 7: chips left on a spot after the round are the next round's wagers."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.cards(["KH", "3D"])
    t.ok("NO_MORE_BETS")
    t.cards(["QH", "4D"])
    recs = t.records()
    assert [r["round_id"] for r in recs] == [1, 2]
    assert recs[1]["positions"][0]["wagers"][0]["amount"] == 500


def test_sh4_cover_card_round_completes_then_shuffle_due() -> None:
    """§(h)(4): the dealer finishes the round, then the cards are reshuffled."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None), 2: (500, None, None)})
    t.ok("NO_MORE_BETS")
    t.card("KH")
    t.cover()
    assert t.state.shoe.cover_seen is True
    assert t.phase() is Phase.DEALING
    t.cards(["3H", "8D"])
    assert len(t.records()) == 1
    assert t.phase() is Phase.SHUFFLE_DUE
    assert len(t.events("reshuffle_due")) == 1
    assert t.press("NO_MORE_BETS") == "NOT_NOW"
    t.ok("SHUFFLED")
    assert t.phase() is Phase.BETTING
    assert t.state.shoe.cover_seen is False


def test_sh4_cover_card_during_a_war_completes_the_war() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, 500)})
    t.cards(["9H", "9S"])
    t.ok("WAR", "1")
    t.cards(["2H", "2D"])
    t.cover()
    t.cards(["2S", "KH", "4D"])
    assert t.position(1)["war_outcome"] == "win"
    assert t.phase() is Phase.SHUFFLE_DUE


def test_sh4_cover_card_between_rounds_makes_the_shuffle_due_now() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.cover()
    assert t.phase() is Phase.SHUFFLE_DUE


def test_sh4_a_card_in_shuffle_due_is_unexpected() -> None:
    t = Table.of(NY)
    t.bets({1: (500, None, None)})
    out = t.card("KH")
    (alert,) = t.raised("UNEXPECTED_CARD", out)
    assert alert.data["severity"] == "critical"
    assert t.state.held
    assert t.state.round.discards == ((1, "KH"),)
    t.ok("CONFIRM")
    assert not t.state.held


def test_phase_sequence_of_a_war_round() -> None:
    """docs/rules.md: shuffle_due → betting → dealing → tie_decision → war_dealing → betting."""
    t = Table.of(STANDARD)
    phases = [t.state.phase]
    t.ok("SHUFFLED")
    phases.append(t.state.phase)
    t.bets({1: (500, None, 500)})
    t.ok("NO_MORE_BETS")
    phases.append(t.state.phase)
    t.cards(["2C", "9H", "9S"])
    phases.append(t.state.phase)
    t.ok("WAR", "1")
    phases.append(t.state.phase)
    t.cards(["2H", "2D", "2S", "KH", "4D"])
    phases.append(t.state.phase)
    assert [p.value for p in phases] == [
        "shuffle_due",
        "betting",
        "dealing",
        "tie_decision",
        "war_dealing",
        "betting",
    ]


def test_chips_on_a_non_playing_position_after_the_latch_join_the_next_round() -> None:
    """docs/rules.md 3: a LATE_WAGER warning; the chips are the next round's wager."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.ok("NO_MORE_BETS")
    out = t.put(2, INITIAL, 700)
    (late,) = t.raised("LATE_WAGER", out)
    assert late.data["severity"] == "warning"
    assert (late.data["position"], late.data["spot"]) == (2, "initial")
    assert not t.state.held
    t.cards(["KH", "3D"])
    assert [p["position"] for p in t.record()["positions"]] == [1]
    t.cards(["QH", "8D", "4C"])
    assert [p["position"] for p in t.record()["positions"]] == [1, 2]


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


def test_last_read_n_is_the_last_read_taken() -> None:
    """The service resumes the shoe from state.last_read_n (docs/devices.md)."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.cards(["KH", "3D"])
    t.cover()
    assert t.state.last_read_n == 4


def test_seq_starts_at_one_and_rises_by_one() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, 500), 2: (500, 100, None)})
    t.cards(["9H", "KH", "9S"])
    t.ok("WAR", "1")
    t.put(3, INITIAL, 100)
    t.cards(["2H", "2D", "2S", "8H", "8D"])
    seqs = [e.seq for e in t.events()]
    assert seqs == list(range(1, len(seqs) + 1))
    assert {e.type for e in t.events()} >= {
        "shoe_started",
        "dealer_changed",
        "bets_closed",
        "card",
        "decision",
        "round_settled",
        "alert",
    }


def test_a_card_after_the_complete_deal_while_held_is_unexpected() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None)})
    t.ok("NO_MORE_BETS")
    t.put(1, INITIAL, 900)  # PAST_POSTING holds the round
    t.cards(["KH", "3D"])
    out = t.card("QS")
    assert len(t.raised("UNEXPECTED_CARD", out)) == 1
    t.ok("CONFIRM")
    assert t.position(1)["card"] == "KH"
    assert t.record()["dealer_card"] == "3D"
