"""Seat sessions and their exact theo, from round records stored in SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from bench.seeder import Seat, Seeder
from table_controller.engine.rules import PROFILES, RulesName
from table_controller.recorder.ratings.sessions import sessions
from table_controller.recorder.store.backend import Backend
from table_controller.tools.odds import house_edges

WAR_WIN = Seat(2500, "tie", "war", "win", tie=500)
WAR_TIE = Seat(1000, "tie", "war", "tie", tie=500, war_tie=200)
SURRENDER = Seat(2500, "tie", "surrender", tie=1000)
WIN = Seat(1500, "win")
LOSE = Seat(5000, "lose", tie=100)


def expected_theo(rules: RulesName, decks: int, seats: list[Seat]) -> Fraction:
    """docs/recorder.md's formula, written out from the odds tool's figures."""
    e = house_edges(PROFILES[rules], decks)
    ties = [s for s in seats if s.decision is not None]
    p = Fraction(sum(s.decision == "war" for s in ties), len(ties))
    main = p * e.edge_war + (1 - p) * e.edge_surrender
    war_tie = e.edge_war_tie or Fraction(0)
    return sum(
        (s.initial * main + s.tie * e.edge_tie + s.war_tie * war_tie for s in seats), Fraction(0)
    )


@pytest.mark.parametrize("rules", list(RulesName))
async def test_theo_is_the_exact_formula_to_the_cent(db: Backend, rules: RulesName) -> None:
    decks = 8 if rules is RulesName.NY else 6
    seeder = Seeder(db, table=f"theo-{rules.value}", rules=rules, decks=decks)
    await seeder.status()
    war_tie = WAR_TIE if PROFILES[rules].war_tie_wager_allowed else Seat(1000, "tie", "war", "tie")
    plays = [WAR_WIN, LOSE, SURRENDER, war_tie, WIN, LOSE, WAR_WIN]
    for seat in plays:
        await seeder.round({1: seat, 2: WIN})
    found = await sessions(db, site=seeder.site, table=seeder.table)
    assert [(s["position"], s["rounds"]) for s in found] == [(1, 7), (2, 7)]
    first = found[0]
    exact = expected_theo(rules, decks, plays)
    assert Fraction(first["theo_exact"]) == exact
    assert first["theo"] == round(exact)
    assert (first["wars"], first["surrenders"]) == (3, 1)
    assert first["war_share"] == 0.75
    assert first["tie_wagers"] == sum(s.tie > 0 for s in plays)
    assert first["war_tie_wagers"] == (1 if PROFILES[rules].war_tie_wager_allowed else 0)
    assert first["actual"] == -sum(
        p["net"] for r in seeder.records for p in r["positions"] if p["position"] == 1
    )
    assert first["handle"] == sum(
        w["amount"]
        for r in seeder.records
        for p in r["positions"]
        if p["position"] == 1
        for w in p["wagers"]
    )
    assert first["average_bet"] == round(Fraction(sum(s.initial for s in plays), len(plays)))


async def test_the_decks_of_the_table_change_the_theo(db: Backend) -> None:
    six = Seeder(db, table="six", decks=6)
    eight = Seeder(db, table="eight", decks=8)
    for seeder in (six, eight):
        await seeder.status()
        await seeder.round({1: SURRENDER})
    a = await sessions(db, site=six.site, table="six")
    b = await sessions(db, site=eight.site, table="eight")
    assert Fraction(a[0]["theo_exact"]) == expected_theo(RulesName.NY, 6, [SURRENDER])
    assert Fraction(b[0]["theo_exact"]) == expected_theo(RulesName.NY, 8, [SURRENDER])
    assert a[0]["theo_exact"] != b[0]["theo_exact"]


async def test_a_session_ends_after_three_rounds_without_an_initial_wager(db: Backend) -> None:
    seeder = Seeder(db, table="gaps")
    # Position 1: plays, sits out 2 (same session), plays, sits out 3 (ended), plays again.
    pattern = "PP..P...PP"
    for mark in pattern:
        await seeder.round({1: WIN, 3: LOSE} if mark == "P" else {3: LOSE})
    # A void round neither plays nor counts as empty.
    await seeder.round({}, void=True)
    found = [s for s in await sessions(db, site=seeder.site, table="gaps") if s["position"] == 1]
    assert [(s["rounds"], s["open"]) for s in found] == [(3, False), (2, True)]
    records = seeder.records
    assert found[0]["start"] == records[0]["started"]
    assert found[0]["end"] == records[4]["ended"]
    assert found[1]["start"] == records[8]["started"]
    assert found[0]["minutes"] == round(5 * 40 / 60, 2)
    position3 = [
        s for s in await sessions(db, site=seeder.site, table="gaps") if s["position"] == 3
    ]
    assert [s["rounds"] for s in position3] == [10]


async def test_the_end_rule_is_configurable(db: Backend) -> None:
    seeder = Seeder(db, table="short")
    for mark in "P.P":
        await seeder.round({1: WIN} if mark == "P" else {2: WIN})
    one = await sessions(db, site=seeder.site, table="short", end_after=1)
    assert [s["rounds"] for s in one if s["position"] == 1] == [1, 1]
    three = await sessions(db, site=seeder.site, table="short")
    assert [s["rounds"] for s in three if s["position"] == 1] == [2]


async def test_without_a_decision_theo_takes_the_lower_policy(db: Backend) -> None:
    seeder = Seeder(db, table="nodecision", rules=RulesName.UK)
    await seeder.status()
    await seeder.round({1: WIN})
    e = house_edges(PROFILES[RulesName.UK], 6)
    found = await sessions(db, site=seeder.site, table="nodecision")
    assert found[0]["war_share"] is None
    assert Fraction(found[0]["theo_exact"]) == WIN.initial * min(e.edge_war, e.edge_surrender)


async def test_rules_overrides_are_weighed_by_their_own_figures(db: Backend) -> None:
    seeder = Seeder(db, table="overrides")
    await seeder.status()
    await seeder.store(seeder.record({1: LOSE}) | {"rules_overrides": {"tie_odds": 8}})
    await seeder.store(seeder.record({2: LOSE}) | {"rules_overrides": {"war.nope": 1}})
    found = {s["position"]: s for s in await sessions(db, site=seeder.site, table="overrides")}
    ny = PROFILES[RulesName.NY]
    e = house_edges(replace(ny, tie_odds=8), 6)
    policy = min(e.edge_war, e.edge_surrender)  # no tie decided: the lower theo
    assert Fraction(found[1]["theo_exact"]) == LOSE.initial * policy + LOSE.tie * e.edge_tie
    assert found[1]["priced"] is True
    # An override the odds cannot take leaves the round unpriced, and says why.
    assert found[2]["priced"] is False
    assert found[2]["theo"] == 0
    assert "war.nope" in found[2]["notes"][0]


async def test_a_round_without_figures_still_counts_in_the_average_bet(db: Backend) -> None:
    seeder = Seeder(db, table="unpriced")
    await seeder.status()
    seat = Seat(initial=1000, tie=500)
    await seeder.round({1: seat})
    await seeder.store(seeder.record({1: seat}) | {"rules_overrides": {"war.nope": 1}})
    (found,) = await sessions(db, site=seeder.site, table="unpriced")
    assert found["rounds"] == 2
    assert found["priced"] is False
    # Two rounds of the same bets: the average is one round's, unpriced or not.
    assert found["average_bet"] == seat.initial
    assert found["tie_wagers"] == 2
    assert found["handle"] == 2 * (seat.initial + seat.tie)
