"""The round's tie decision and war, clause by clause (docs/rules.md, 9 NYCRR
§5324.22(i)(3) and (i)(5)): the console's decisions, the burns before the war, the war
wager and the war's tie wager."""

from __future__ import annotations

from dataclasses import replace

import pytest

from table_controller.engine import Phase
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

from .helpers import TIE, WAR, Table, foreign_card_in_the_war, war_spot_mask


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


def _war_with_chips_on_the_tie_spot(rules: RulesProfile) -> Table:
    """Position 1 ties, goes to war, and puts chips on the tie spot before its decision;
    the war is dealt, and ties again (§(i)(5))."""
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (1000, None, None)})
    t.cards(["9H", "9S"])
    t.put(1, WAR, 1000)
    t.put(1, TIE, 200)
    t.ok("WAR", "1")
    t.cards(["2H", "2D", "2S", "KH", "KD"])
    return t


def test_si5_war_tie_wager_on_the_tie_spot_at_the_last_decision_ny() -> None:
    """§(i)(5): the dealer offers a tie wager on the war deal (ny)."""
    t = _war_with_chips_on_the_tie_spot(NY)
    war_tie = t.wager(1, "war_tie")
    assert (war_tie["amount"], war_tie["result"], war_tie["net"]) == (200, "win", 2000)


@pytest.mark.parametrize("rules", [pytest.param(p, id=p.name.value) for p in (UK, STANDARD)])
def test_si5_no_war_tie_wager_where_the_profile_forbids_it(rules: RulesProfile) -> None:
    t = _war_with_chips_on_the_tie_spot(rules)
    assert [w["spot"] for w in t.position(1)["wagers"]] == ["initial", "war"]


@pytest.mark.parametrize("rules", [NY, UK, STANDARD], ids=lambda r: r.name.value)
def test_a_void_in_the_war_deal_keeps_what_the_original_deal_settled(rules: RulesProfile) -> None:
    """§(i)(1)-(2): the original deal's initial and tie wagers are collected and paid before
    any war card, and §(i)(3)(i) ends a surrendered hand's part in the round. A misdeal in
    the war deal (a foreign card, which only VOID_ROUND answers) voids what the war deal
    was to decide, and nothing the table already paid or took."""
    t = foreign_card_in_the_war(rules)
    drop_before = t.state.stats.drop
    t.ok("VOID_ROUND")
    record = t.record()
    assert record["void"] is True
    results = {
        (p["position"], w["spot"]): (w["result"], w["net"])
        for p in record["positions"]
        for w in p["wagers"]
    }
    tie_win = 100 * 10
    # Where the profile makes the chips left on P1's tie spot a tie wager on the war deal:
    assert results.pop((1, "war_tie"), ("void", 0)) == ("void", 0)
    assert results == {
        (1, "initial"): ("void", 0),  # its fate was the war deal's
        (1, "tie"): ("win", tie_win),
        (1, "war"): ("void", 0),
        (2, "initial"): ("win", 500),
        (2, "tie"): ("lose", -100),
        (3, "initial"): ("surrender", -250),
    }
    assert record["net"] == tie_win + 500 - 100 - 250
    stats = t.state.stats
    assert (stats.rounds, stats.voids, stats.ties, stats.wars, stats.surrenders) == (0, 1, 2, 1, 1)
    assert drop_before is not None
    assert stats.drop == drop_before + 100 + 500 + 100 + 500
    assert stats.win == -record["net"]
