"""Wagers in action on the war and tie spots, and burn ranks in alert messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_controller.engine import Phase, stats_view
from table_controller.engine.domain import set_bits
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

from .helpers import TIE, WAR, Table


def test_sh1_a_foreign_burn_card_is_not_named_in_its_alert() -> None:
    """§(h)(1): the burn card's rank is revealed to no one; the live feeds carry it
    without rank (docs/rules.md), and an alert is a live feed."""
    t = Table.of(STANDARD, decks=1)
    t.open_shoe()
    t.bets({1: (2500, None, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["AS", "KD"])
    assert len(t.records()) == 1
    t.ok("DEALER", "D-2")  # a new dealer: a burn card is due
    out = t.card("AS")  # that burn: a second AS in a one-deck shoe
    (burn,) = t.events("card", out)
    assert (burn.data["role"], burn.data["card"]) == ("burn", None)
    (alert,) = t.raised("FOREIGN_CARD", out)
    assert "AS" not in alert.data["message"]


def _tied_at_war(rules: RulesProfile, *, faulty: int | None = None) -> Table:
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (2500, None, None)})
    if faulty is not None:
        t.fault(1, faulty)  # flagged while the spot plays no wager: a warning
    t.ok("NO_MORE_BETS")
    t.cards(["7H", "7S"])
    assert t.phase() is Phase.TIE_DECISION
    return t


def test_a_faulty_war_sensor_holds_the_round_when_the_war_wager_goes_into_action() -> None:
    """docs/rules.md: SENSOR_FAULT is critical if the spot plays; never settle on uncertain data."""
    t = _tied_at_war(NY, faulty=WAR)
    assert not t.state.held
    t.put(1, WAR, 2500)
    t.ok("WAR", "1")
    assert any(a.data["severity"] == "critical" for a in t.raised("SENSOR_FAULT"))
    assert t.state.held
    t.cards(["2D", "3D", "4D", "KH", "2S"])
    assert not t.records()
    t.ok("CONFIRM")
    assert len(t.records()) == 1


def test_a_fault_on_a_war_wager_in_action_is_critical() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (2500, None, None), 2: (2500, None, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["7H", "7D", "7S"])  # both positions tie
    t.put(1, WAR, 2500)
    t.ok("WAR", "1")  # P1's war wager is in action while P2 decides
    out = t.fault(1, WAR)
    (alert,) = t.raised("SENSOR_FAULT", out)
    assert alert.data["severity"] == "critical"


def test_si5_a_faulty_tie_sensor_holds_the_round_when_the_war_tie_wager_plays() -> None:
    """§(i)(5): the tie spot's chips at the last decision are a tie wager on the war deal."""
    t = _tied_at_war(NY, faulty=TIE)
    t.put(1, WAR, 2500)
    t.put(1, TIE, 500)
    t.ok("WAR", "1")
    assert t.state.round.hand(1) is not None
    assert t.state.round.hand(1).war_tie is not None  # type: ignore[union-attr]
    assert t.state.held


def _two_ties(rules: RulesProfile) -> Table:
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (2500, None, None), 2: (2500, None, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["7H", "7D", "7S"])
    t.put(1, WAR, 2500)
    t.ok("WAR", "1")  # P1's war wager: 2500, in action
    return t


@pytest.mark.parametrize("rules", [NY, UK], ids=["ny", "uk"])
def test_sg2_war_chips_taken_back_before_the_last_decision(rules: RulesProfile) -> None:
    """§(g)(2): no player shall remove or alter a wager until it is decided; docs/rules.md
    exempts only chips added to the war spot in tie_decision."""
    t = _two_ties(rules)
    out = t.take(1, WAR)
    assert t.raised("WAGER_REMOVED", out)
    assert t.state.held


def test_sg2_a_war_wager_raised_after_the_war_press_is_past_posting() -> None:
    """Rule 5, §(g)(2): from the WAR press on, the war spot is guarded (issue case 2)."""
    t = _two_ties(NY)
    out = t.put(1, WAR, 3000)
    (alert,) = t.raised("PAST_POSTING", out)
    assert (alert.data["position"], alert.data["spot"]) == (1, "war")
    assert not t.raised("WAGER_REMOVED", out)
    assert t.state.held
    # Held: the other position cannot decide until the dealer answers for the chips.
    assert t.press("SURRENDER", "2") == "NOT_NOW"
    t.ok("CONFIRM")
    t.ok("SURRENDER", "2")
    t.cards(["2D", "3D", "4D", "KH", "2S"])
    # docs/rules.md: after a confirmed PAST_POSTING the wager settles at its latched amount.
    assert t.wager(1, "war")["amount"] == 2500


def test_a_lowered_war_wager_settles_at_its_amount_once_confirmed() -> None:
    """docs/rules.md: after a confirmed WAGER_REMOVED the wager settles at its latched amount."""
    t = _two_ties(NY)
    out = t.put(1, WAR, 500)
    assert t.raised("WAGER_REMOVED", out)
    t.ok("CONFIRM")
    t.ok("SURRENDER", "2")
    t.cards(["2D", "3D", "4D", "KH", "2S"])
    (record,) = t.records()
    war = next(w for w in record["positions"][0]["wagers"] if w["spot"] == "war")
    assert (war["amount"], war["result"], war["net"]) == (2500, "win", 5000)


@pytest.mark.parametrize(
    ("action", "arg", "reason"),
    [
        ("CONFIRM", "2", "BAD_ARGUMENT"),
        ("NO_MORE_BETS", "1", "BAD_ARGUMENT"),
        ("DEALER", None, "BAD_ARGUMENT"),
        ("DANCE", None, "UNKNOWN_ACTION"),
    ],
)
def test_an_ill_formed_press_is_refused_not_ignored(
    action: str, arg: str | None, reason: str
) -> None:
    """docs/devices.md: every press gets exactly one ACK or NAK."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (2500, None, None)})
    assert t.press(action, arg) == reason
    assert t.phase() is Phase.BETTING


def test_sh3iii_a_void_tie_wager_is_not_part_of_the_drop() -> None:
    """§(h)(3)(iii): a tie wager with no initial wager is void, never in action."""
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (2500, None, None), 2: (None, 500, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["9H", "7S"])
    assert stats_view(t.state)["drop"] == 2500


@given(st.integers(min_value=0, max_value=(1 << 63) - 1))
def test_set_bits_names_each_set_bit_once_lowest_first(mask: int) -> None:
    bits = list(set_bits(mask))
    assert bits == sorted(set(bits))
    assert sum(1 << b for b in bits) == mask


def test_set_bits_refuses_a_negative_mask() -> None:
    with pytest.raises(ValueError, match="negative"):
        list(set_bits(-1))
