"""``table-controller journal verify --config F``: the auditor's check of a table's journal.

It replays the journal from the oldest checkpoint still held (or from the start, when
none is) and checks that every later checkpoint comes out equal to the state the
replay reaches at that input: the checkpoints a restart starts from are what the
inputs say. It opens the journal read-only, so it may run beside the table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Final, TextIO

from table_controller.engine import EngineSnapshot, RoundEngine, TableSetup, input_from_json
from table_controller.feed.chain import breaks
from table_controller.service.binding import start_state, table_setup, under_setup
from table_controller.service.checkpoint import CheckpointError, load_state
from table_controller.service.config import TableConfig
from table_controller.service.journal import Checkpoint, Journal

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1
# The journal keeps the last round records whatever it prunes; all of them are checked.
RECORDS_CHECKED: Final = 1_000_000


@dataclass
class Verified:
    """What a verification checked."""

    start: int  # the input the replay started after (0: the journal's start)
    last: int = 0
    inputs: int = 0
    checked: list[int] = field(default_factory=list)
    mismatch: str | None = None
    state: EngineSnapshot | None = None
    records: int = 0  # round records held, whose hash chain was checked
    record_breaks: list[str] = field(default_factory=list)


def _differ(a: EngineSnapshot, b: EngineSnapshot) -> str:
    names = [f.name for f in fields(a) if getattr(a, f.name) != getattr(b, f.name)]
    return ", ".join(names) or "(equal)"


def _expected(engine: RoundEngine, setup: TableSetup) -> EngineSnapshot:
    """A checkpoint under new settings follows a change of settings (``binding.py``): the
    same table under the new setup, one event (``settings_changed``) further."""
    snapshot = engine.snapshot()
    return under_setup(snapshot, setup) if setup != engine.setup else snapshot


def verify(cfg: TableConfig, journal: Journal) -> Verified:
    """The checkpoints against the replay, and the hash chain of the round records held."""
    result = _verify_checkpoints(cfg, journal)
    records = [json.loads(m.payload) for m in journal.last_messages("rounds", RECORDS_CHECKED)]
    result.records = len(records)
    # The oldest record held may follow one pruned already: its link is not checked.
    previous = None if not records or records[0].get("prev_hash") is None else records[0]
    result.record_breaks = [
        f"round {b.round_id}: {b.kind} ({b.detail})"
        for b in breaks(records[1:] if previous else records, previous)
    ]
    return result


def _verify_checkpoints(cfg: TableConfig, journal: Journal) -> Verified:
    checkpoints = journal.checkpoints()
    oldest = next(checkpoints, None)
    if oldest is None:
        engine, after, _ = start_state(journal, table_setup(cfg))
    else:
        try:
            setup, snapshot = load_state(oldest.body, oldest.version)
        except CheckpointError as exc:
            return Verified(start=oldest.input_n, mismatch=f"checkpoint {oldest.input_n}: {exc}")
        engine, after = RoundEngine.from_snapshot(setup, snapshot), oldest.input_n
    result = Verified(start=after, last=after)
    pending: Checkpoint | None = next(checkpoints, None)

    def check(n: int, engine: RoundEngine) -> RoundEngine | None:
        """The engine to go on with after input ``n``, once its checkpoints are checked."""
        nonlocal pending
        while pending is not None and pending.input_n == n:
            try:
                setup, held = load_state(pending.body, pending.version)
            except CheckpointError as exc:
                result.mismatch = f"checkpoint {n}: {exc}"
                return None
            expected = _expected(engine, setup)
            if held != expected:
                result.mismatch = (
                    f"checkpoint at input {n} differs from the replay in: {_differ(held, expected)}"
                )
                return None
            result.checked.append(n)
            # Go on as a restart from this checkpoint would.
            engine = RoundEngine.from_snapshot(setup, held)
            pending = next(checkpoints, None)
        return engine

    # A checkpoint at the very start (a change of settings before any input).
    current = check(after, engine)
    for n, body in journal.numbered_inputs(after=after):
        if current is None:
            return result
        try:
            inp = input_from_json(body)
        except ValueError as exc:
            result.mismatch = f"input {n} is unreadable: {exc}"
            return result
        current.feed(inp)
        result.inputs += 1
        result.last = n
        current = check(n, current)
    if current is None:
        return result
    result.state = current.snapshot()
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
    print(
        f"round records held: {result.records}, hash chain "
        + (
            "unbroken" if not result.record_breaks else f"BROKEN: {'; '.join(result.record_breaks)}"
        ),
        file=out,
    )
    if result.mismatch is not None:
        print(f"MISMATCH: {result.mismatch}", file=out)
        return EXIT_MISMATCH
    if result.record_breaks:
        return EXIT_MISMATCH
    if result.state is not None:
        print(
            f"table now: round {result.state.round_id}, phase {result.state.phase.value}, "
            f"{result.state.stats.rounds} rounds settled",
            file=out,
        )
    print("OK", file=out)
    return EXIT_OK
