"""No input sequence raises: arbitrary inputs, including nonsense, from any table state."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.engine import (
    DECK,
    CardRead,
    ConsolePress,
    Input,
    RoundEngine,
    SpotsChanged,
    TableSetup,
    device_states,
    state_view,
    stats_view,
)
from table_controller.engine.rules import NY, UK, RulesProfile

from .helpers import T0
from .test_codec import inputs as any_input

plausible: st.SearchStrategy[Input] = st.one_of(
    st.builds(
        CardRead,
        st.just(T0),
        st.integers(-3, 400),
        st.sampled_from(DECK) | st.sampled_from(["", "X", "10H", "ah"]),
    ),
    st.builds(
        ConsolePress,
        st.just(T0),
        st.integers(-2, 40),
        st.sampled_from(
            [
                "SHUFFLED",
                "DEALER",
                "NO_MORE_BETS",
                "SURRENDER",
                "WAR",
                "CARD",
                "CONFIRM",
                "VOID_ROUND",
                "SKIP",
                "",
            ]
        ),
        st.none() | st.sampled_from(["1", "2", "7", "0", "-1", "99999", "AS", "x", "", " 3 "]),
    ),
    st.builds(
        SpotsChanged,
        st.just(T0),
        st.integers(-1, 2**40),
        st.integers(-1, 2**40),
        st.none()
        | st.lists(st.tuples(st.integers(-2, 40), st.integers(-5, 10**6)), max_size=8).map(tuple),
    ),
    any_input,
)


@settings(max_examples=300)
@given(
    rules=st.sampled_from([NY, UK]),
    decks=st.integers(1, 8),
    positions=st.integers(1, 10),
    seq=st.lists(plausible, max_size=80),
)
def test_no_input_sequence_raises(
    rules: RulesProfile, decks: int, positions: int, seq: list[Input]
) -> None:
    engine = RoundEngine(TableSetup(rules, decks, positions))
    last_seq = 0
    for inp in seq:
        out = engine.feed(inp)
        for o in out:
            seq_no = getattr(o, "seq", None)
            if seq_no is not None:
                assert seq_no == last_seq + 1
                last_seq = seq_no
    state = engine.snapshot()
    json.dumps([state_view(state), stats_view(state), device_states(state)])
    # The snapshot survives its JSON form, whatever the inputs did.
    assert type(state).from_json(json.loads(json.dumps(state.to_json()))) == state
