"""``table-controller journal verify --config F``: the auditor's check of a table's journal.

It replays the journal from the oldest checkpoint still held (or from the start, when
none is) and checks that every later checkpoint comes out equal to the state the
replay reaches at that input: the checkpoints a restart starts from are what the
inputs say. It opens the journal read-only, so it may run beside the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, TextIO

from table_controller.engine import TableState
from table_controller.service.binding import replay_inputs, start_state, table_setup
from table_controller.service.checkpoint import CheckpointError, load_state
from table_controller.service.config import TableConfig
from table_controller.service.journal import Checkpoint, Journal

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1


@dataclass
class Verified:
    """What a verification checked."""

    start: int  # the input the replay started after (0: the journal's start)
    last: int = 0
    inputs: int = 0
    checked: list[int] = field(default_factory=list)
    mismatch: str | None = None
    state: TableState | None = None


def _differ(a: TableState, b: TableState) -> str:
    names = [n for n in TableState._fields if getattr(a, n) != getattr(b, n)]
    return ", ".join(names) or "(equal)"


def _expected(replayed: TableState, ck: TableState) -> TableState:
    """A checkpoint under new settings follows a change of settings (``binding.py``): the
    same table under the new setup, one event (``settings_changed``) further."""
    if ck.setup != replayed.setup:
        return replayed._replace(setup=ck.setup, seq=replayed.seq + 1)
    return replayed


def verify(cfg: TableConfig, journal: Journal) -> Verified:
    checkpoints = journal.checkpoints()
    oldest = next(checkpoints, None)
    if oldest is None:
        state, after, _ = start_state(journal, table_setup(cfg))
    else:
        try:
            state = load_state(oldest.body, oldest.version)
        except CheckpointError as exc:
            return Verified(start=oldest.input_n, mismatch=f"checkpoint {oldest.input_n}: {exc}")
        after = oldest.input_n
    result = Verified(start=after, last=after, state=state)
    pending: Checkpoint | None = next(checkpoints, None)

    def check(n: int, state: TableState) -> TableState | None:
        nonlocal pending
        while pending is not None and pending.input_n == n:
            try:
                held = load_state(pending.body, pending.version)
            except CheckpointError as exc:
                result.mismatch = f"checkpoint {n}: {exc}"
                return None
            expected = _expected(state, held)
            if held != expected:
                result.mismatch = (
                    f"checkpoint at input {n} differs from the replay in: {_differ(held, expected)}"
                )
                return None
            result.checked.append(n)
            state = held
            pending = next(checkpoints, None)
        return state

    # A checkpoint at the very start (a change of settings before any input).
    checked = check(after, state)
    if checked is None:
        return result
    state = checked
    for n, new in replay_inputs(journal, state, after=after):
        result.inputs += 1
        result.last = n
        checked = check(n, new)
        if checked is None:
            return result
        state = checked
    result.state = state
    if pending is not None:
        result.mismatch = f"checkpoint at input {pending.input_n} follows no input held"
    return result


def report(journal: Journal, cfg: TableConfig, result: Verified, out: TextIO) -> int:
    meta = journal.meta()
    print(
        f"journal {journal.path}: table {meta.get('table', cfg.table.id)} at "
        f"{meta.get('site', cfg.table.site)}, epoch {journal.epoch}",
        file=out,
    )
    origin = f"the checkpoint at input {result.start}" if result.start else "the first input"
    print(f"replayed from {origin}: {result.inputs} inputs, up to input {result.last}", file=out)
    print(
        f"checkpoints checked equal to the replay: {len(result.checked)}"
        + (f" (inputs {result.checked[0]}..{result.checked[-1]})" if result.checked else ""),
        file=out,
    )
    if result.mismatch is not None:
        print(f"MISMATCH: {result.mismatch}", file=out)
        return EXIT_MISMATCH
    if result.state is not None:
        print(
            f"table now: round {result.state.round_id}, phase {result.state.phase.value}, "
            f"{result.state.stats.rounds} rounds settled",
            file=out,
        )
    print("OK", file=out)
    return EXIT_OK
