"""A holder for the table state, and replay of a journal of inputs."""

from __future__ import annotations

from collections.abc import Iterable

from table_controller.engine.inputs import Input
from table_controller.engine.outputs import Output
from table_controller.engine.state import TableSetup, TableState, initial_state
from table_controller.engine.transition import transition


class RoundEngine:
    """The current table state of one table; ``feed`` applies an input to it."""

    __slots__ = ("_setup", "_state")

    def __init__(self, setup: TableSetup, state: TableState | None = None) -> None:
        if state is not None and state.setup != setup:
            raise ValueError("the state belongs to a different table setup")
        self._setup = setup
        self._state = state if state is not None else initial_state(setup)

    @property
    def setup(self) -> TableSetup:
        return self._setup

    @property
    def state(self) -> TableState:
        return self._state

    def feed(self, inp: Input) -> list[Output]:
        self._state, outputs = transition(self._state, inp)
        return outputs


def replay(setup: TableSetup, inputs: Iterable[Input]) -> tuple[TableState, list[Output]]:
    """The table rebuilt from its journal, and every output the inputs produced."""
    state = initial_state(setup)
    outputs: list[Output] = []
    for inp in inputs:
        state, out = transition(state, inp)
        outputs.extend(out)
    return state, outputs
