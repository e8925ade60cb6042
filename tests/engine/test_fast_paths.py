"""The engine's shortcuts give exactly what the general path gives.

``transition`` takes the commonest inputs (a card dealt mid-deal) in one step;
these tests hold that step to the general path, state and outputs, on every
input of seeded sessions and on variants of each card read (a repeated read
number, a name the engine cannot parse, one copy too many), and hold the
quickly built events and state values equal to ones built the ordinary way.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from table_controller.engine import (
    CARD_INDEX,
    CardRead,
    Event,
    TableState,
    initial_state,
    transition,
)
from table_controller.engine.outputs import new_event
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile
from table_controller.engine.state import (
    CardSlot,
    Hand,
    Role,
    RoundState,
    ShoeState,
    Source,
    Stats,
    Wager,
)
from table_controller.engine.transition import _dealt_card, _transition

from .helpers import Table, random_session

CASES = [
    pytest.param(rules, seed, id=f"{rules.name.value}-seed={seed}")
    for rules, seed in ((NY, 31), (UK, 32), (STANDARD, 33), (NY, 34))
]


def _same(state: TableState, inp: CardRead) -> None:
    assert transition(state, inp) == _transition(state, inp)


@pytest.mark.parametrize(("rules", "seed"), CASES)
def test_every_input_gives_what_the_general_path_gives(rules: RulesProfile, seed: int) -> None:
    t = random_session(rules, seed, rounds=30)
    state = initial_state(t.setup)
    taken = 0
    for inp in t.inputs:
        if type(inp) is CardRead:
            taken += _dealt_card(state, inp) is not None
            _same(state, inp)
            _same(state, replace(inp, n=state.last_read_n))
            _same(state, replace(inp, card="ZZ"))
        fast = transition(state, inp)
        assert fast == _transition(state, inp)
        state = fast[0]
    assert state == t.state
    assert taken > 0


def test_one_copy_too_many_takes_the_general_path() -> None:
    t = Table.of(NY)
    t.open_shoe()
    t.bets({1: (500, None, None), 2: (500, None, None)})
    t.press("NO_MORE_BETS")
    # The 9S read as often as the shoe holds it: one more is a foreign card.
    index = CARD_INDEX["9S"]
    shoe = t.state.shoe
    counts = (shoe.counts & ~(0xFF << (8 * index))) | (t.setup.decks << (8 * index))
    state = t.state._replace(shoe=shoe._replace(counts=counts))
    inp = CardRead(datetime(2024, 1, 1, tzinfo=UTC), state.last_read_n + 1, "9S")
    assert state.round.plan_i + 1 < len(state.round.plan)
    assert _dealt_card(state, inp) is None
    _same(state, inp)
    assert any(
        type(o) is Event and o.data.get("code") == "FOREIGN_CARD" for o in transition(state, inp)[1]
    )


def test_new_event_is_the_same_value_as_event() -> None:
    at = datetime(2024, 1, 1, tzinfo=UTC)
    fast = new_event(7, "card", 3, at, {"n": 1})
    assert fast == Event(7, "card", 3, at, {"n": 1})
    assert type(fast) is Event
    assert repr(fast) == repr(Event(7, "card", 3, at, {"n": 1}))


def test_state_values_built_from_a_tuple_equal_those_built_by_name() -> None:
    slot = tuple.__new__(CardSlot, (4, "TD", Role.DEALER, None, Source.SHOE, False))
    assert slot == CardSlot(4, "TD", Role.DEALER, None, Source.SHOE)
    assert len(RoundState._fields) == 13
    assert len(ShoeState._fields) == 7
    assert len(TableState._fields) == 13
    assert len(Stats._fields) == 12
    assert len(Hand._fields) == 8
    assert len(Wager._fields) == 1
    assert len(CardSlot._fields) == 6
