"""The card alerts of docs/rules.md's table, FOREIGN_CARD, MISREAD, SHOE_READ_GAP and
UNEXPECTED_CARD: when they are raised, their severity, how they are resolved."""

from __future__ import annotations

import json

import pytest

from table_controller.engine import Event, Phase, ReadGap, Role, state_view
from table_controller.engine.rules import NY

from .helpers import INITIAL, WAR, Table, _dealing

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


@pytest.mark.parametrize("latched_by", ["NO_MORE_BETS", "first card"])
def test_unexpected_card_when_the_latch_leaves_no_playing_position(latched_by: str) -> None:
    """docs/rules.md rule 3: a faulty initial-spot sensor at the latch closes its position.
    With no position left to play no card is due: a card then is UNEXPECTED_CARD, set aside
    unseen on the live feeds, and the round ends only by VOID_ROUND."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (2500, None, None)})
    t.fault(1, INITIAL)
    if latched_by == "NO_MORE_BETS":
        t.ok("NO_MORE_BETS")
        t.ok("CONFIRM")  # SENSOR_FAULT: the dealer has returned P1's chips
        assert t.records() == []
    out = t.card("KH")
    rnd = t.state.round
    assert (rnd.latched, list(rnd.closed), list(rnd.hands)) == (True, [1], [])
    (alert,) = t.raised("UNEXPECTED_CARD", out)
    assert alert.data["severity"] == "critical"
    assert rnd.discards[-1] == (t.n, "KH")
    assert [c.role for c in rnd.cards] == [Role.BURN]
    assert "KH" not in json.dumps([dict(e.data) for e in t.events()] + [state_view(t.state)])
    t.ok("CONFIRM")
    assert t.records() == []
    assert not t.state.held
    assert t.press("CONFIRM") == "NOT_NOW"
    assert "VOID_ROUND" in t.shows()[-1]
    t.ok("VOID_ROUND")
    (rec,) = t.records()
    assert (rec["void"], rec["positions"], rec["dealer_card"]) == (True, [], None)
    assert rec["discards"] == [{"n": t.n, "card": "KH"}]
    assert (t.state.stats.rounds, t.state.stats.voids) == (0, 1)
    assert t.phase() is Phase.BETTING


def test_repeated_read_number_is_ignored() -> None:
    t = _dealing(p1=(1000, None, None))
    t.card("KH")
    t.n -= 1
    assert t.card("QH") == []
    assert t.state.stats.duplicate_reads == 1
