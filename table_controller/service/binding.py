"""A journal belongs to one table (docs/rules.md, last paragraph), and restarts from a checkpoint.

At start the journal is bound to the config: its recorded table id and site
must be the config's (else :class:`JournalMismatch` names the key), and its
game settings (rules, decks, positions, limits) too, except between shoes
(``shuffle_due``), when a change is accepted: it is journaled as a checkpoint
under the new settings, with a ``settings_changed`` event, in one commit.

The table is rebuilt from the latest checkpoint and the inputs after it, so a
restart costs the same after a day or a year on the floor.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from table_controller.engine import (
    EngineSnapshot,
    Event,
    EventType,
    Phase,
    RoundEngine,
    TableSetup,
    input_from_json,
)
from table_controller.service.checkpoint import (
    CHECKPOINT_VERSION,
    CheckpointError,
    dump_state,
    load_engine,
    setup_from_json,
    setup_json,
)
from table_controller.service.config import TableConfig, overrides_of
from table_controller.service.errors import JournalMismatch
from table_controller.service.journal import Journal
from table_controller.service.journal_file import damaged
from table_controller.service.messages import MessageFactory

log = logging.getLogger(__name__)

# The config key that names each recorded setting, for the refusal's message.
_SETTING_KEYS = {
    "rules": "table.rules / [profile]",
    "decks": "table.decks",
    "positions": "table.positions",
    "limits": "table.limits",
}


def table_setup(cfg: TableConfig) -> TableSetup:
    return TableSetup(
        rules=cfg.rules,
        decks=cfg.decks,
        positions=cfg.table.positions,
        limits=cfg.table.limits,
        overrides=overrides_of(cfg),
    )


@dataclass(frozen=True, slots=True)
class Restored:
    engine: RoundEngine
    # Inputs replayed after the checkpoint (all of them when there is none).
    replayed: int
    checkpoint_n: int | None


def start_state(journal: Journal, setup: TableSetup) -> tuple[RoundEngine, int, int | None]:
    """The engine at the latest checkpoint (or a new table's) and the input it follows."""
    latest = journal.latest_checkpoint()
    if latest is None:
        first = journal.first_input_number()
        if first is not None and first > 1:
            raise damaged(journal.path, f"inputs before {first} are gone and no checkpoint holds")
        return RoundEngine(setup), 0, None
    try:
        engine = load_engine(latest.body, latest.version)
    except CheckpointError as exc:
        raise damaged(journal.path, f"checkpoint at input {latest.input_n}: {exc}") from exc
    return engine, latest.input_n, latest.input_n


def replay_inputs(
    journal: Journal, engine: RoundEngine, *, after: int, upto: int | None = None
) -> Iterator[int]:
    """``engine`` fed every input after ``after`` (up to ``upto``); yields each number."""
    for number, body in journal.numbered_inputs(after=after, upto=upto):
        try:
            inp = input_from_json(body)
        except ValueError as exc:
            raise damaged(journal.path, f"input {number}: {exc}") from exc
        engine.feed(inp)
        yield number


def restore(cfg: TableConfig, journal: Journal) -> Restored:
    """The table as the journal left it: latest checkpoint + the inputs after it."""
    # Without a checkpoint, the settings the journal was started with (a new journal: the
    # config's).
    recorded = journal.meta().get("settings")
    setup = table_setup(cfg) if recorded is None else setup_from_json(json.loads(recorded))
    engine, after, ck = start_state(journal, setup)
    count = sum(1 for _ in replay_inputs(journal, engine, after=after))
    return Restored(engine, count, ck)


def under_setup(snapshot: EngineSnapshot, setup: TableSetup) -> EngineSnapshot:
    """The table between shoes carried over to new settings, one event further on.

    Only in ``shuffle_due``: no round is dealt and the shoe is about to be replaced, so
    nothing of the snapshot depends on the old rules, decks or positions. The event
    sequence goes on across the change: ``settings_changed`` takes the next number.
    """
    return replace(
        snapshot,
        seq=snapshot.seq + 1,
        rules=setup.rules.name.value,
        decks=setup.decks,
        positions=setup.positions,
    )


def _identity(cfg: TableConfig) -> dict[str, str]:
    return {"table": cfg.table.id, "site": cfg.table.site}


def bind(
    cfg: TableConfig, journal: Journal, restored: Restored, messages: MessageFactory
) -> RoundEngine:
    """Check that the journal is this table's; apply a change of settings between shoes."""
    meta = journal.meta()
    for key, value in _identity(cfg).items():
        have = meta.get(key)
        if have is not None and have != value:
            raise JournalMismatch(
                f"table.{'id' if key == 'table' else key}: {journal.path} is the journal of "
                f"table {meta.get('table')!r} at site {meta.get('site')!r}, not {value!r}; "
                "give this table its own [storage] path"
            )
    engine = restored.engine
    wanted = setup_json(table_setup(cfg))
    recorded = setup_json(engine.setup)
    if "table" not in meta:
        # A new journal (or one from before tables were recorded): this table's now.
        journal.set_meta({**_identity(cfg), "settings": json.dumps(wanted)})
    if wanted == recorded:
        return engine
    changed = [k for k in wanted if wanted[k] != recorded[k]]
    keys = ", ".join(_SETTING_KEYS[k] for k in changed)
    if engine.phase is not Phase.SHUFFLE_DUE:
        raise JournalMismatch(
            f"{keys}: the settings changed mid-shoe (the table is in {engine.phase.value}, "
            f"round {engine.round_id}); they may change only between shoes: restore the old "
            f"value, finish the shoe, and change it when the next shuffle is due"
        )
    return _change_settings(cfg, journal, engine, changed, messages)


def _change_settings(
    cfg: TableConfig,
    journal: Journal,
    engine: RoundEngine,
    changed: list[str],
    messages: MessageFactory,
) -> RoundEngine:
    setup = table_setup(cfg)
    snapshot = engine.snapshot()
    new = RoundEngine.from_snapshot(setup, under_setup(snapshot, setup))
    settings = setup_json(setup)
    event = Event(
        seq=snapshot.seq + 1,
        type=EventType.SETTINGS_CHANGED,
        round_id=None,
        at=datetime.now(UTC),
        data={"changed": [_SETTING_KEYS[k].split(" ")[0] for k in changed], "settings": settings},
    )
    before = messages.feed_seq
    try:
        msgs = messages.event(event)
        last = journal.last_input_number()
        journal.record_settings(
            last, (CHECKPOINT_VERSION, dump_state(new)), msgs, {"settings": json.dumps(settings)}
        )
    except BaseException:
        messages.feed_seq = before
        raise
    log.warning("settings changed between shoes: %s", ", ".join(changed))
    return new


def last_round_hash(journal: Journal) -> str | None:
    """The ``hash`` of the journal's newest round record (the journal keeps the last ones
    whatever it prunes), so that the chain goes on across a restart."""
    last = journal.last_messages("rounds", 1)
    if not last:
        return None
    value = json.loads(last[0].payload).get("hash")
    return value if isinstance(value, str) else None
