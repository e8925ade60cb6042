"""The round's end and what runs across rounds (docs/rules.md, 9 NYCRR §5324.22(h)(4)):
chips left for the next round, the cover card, the phase sequence, read numbers and the
events' seq."""

from __future__ import annotations

from table_controller.engine import Phase
from table_controller.engine.rules import NY, STANDARD

from .helpers import INITIAL, Table


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
