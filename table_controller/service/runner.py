"""The runner: the one place that feeds the engine and carries out what it says.

Every input goes through :meth:`TableRunner.handle`, which

1. feeds the engine the input (``RoundEngine.feed``); should the commit fail, the
   engine is rebuilt from the journal,
2. turns its outputs into outbox messages (events, alerts, round records),
3. commits the input and those messages in ONE transaction, the input's one
   fsync,
4. and only then acts: console answers, display lines and layout lights go to
   the device tasks' queues, and the messages to the publisher, which puts them
   on the wire at once when it is caught up (``Publisher.publish_now``); a due
   checkpoint of the new state is written after that, in a commit of its own.

So the engine never runs ahead of the disk. When the commit fails (disk full,
I/O error: docs/rules.md ``JOURNAL_FAULT``) the input is not acted on: presses get
``NAK,<k>,JOURNAL_FAULT``, the console and the log say so, ``status`` shows
the journal's fault, and :meth:`TableRunner.retry_journal` (the service's
fault task) tries again until a commit succeeds. Then the fault resolves, the
shoe is asked again for the reads it sent meanwhile (``RESEND``) and the
latest sensor snapshot is taken again.

``handle`` never awaits: it is called as device events arrive (the shoe's and
the console's as their bytes are read, the sensor board's as its worker posts
them), so inputs are serialised by the event loop and the game never waits for
the network.

The retained ``state`` and ``stats`` (latest value wins, docs/feed.md) are built
apart, by :meth:`TableRunner.flush_views`, which the service calls once the
inputs that arrived together are handled, and sent from memory, never
journaled: the engine, which the journal rebuilds at any start, gives them again.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from table_controller import __version__
from table_controller.engine import (
    ConsolePress,
    ConsoleReply,
    ConsoleShow,
    DeviceOffline,
    DeviceOnline,
    EngineSnapshot,
    Event,
    EventType,
    Input,
    Output,
    Phase,
    RoundRecorded,
    SetLights,
    SpotsChanged,
    device_states,
    input_to_json,
    state_view,
    stats_view,
)
from table_controller.service.binding import bind, last_round_hash, restore, table_setup
from table_controller.service.checkpoint import CHECKPOINT_VERSION, dump_state
from table_controller.service.config import TableConfig
from table_controller.service.errors import JournalFault
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.journal_fault import Committed, JournalFaults, Refused
from table_controller.service.messages import MessageFactory

log = logging.getLogger(__name__)
# Instances of earlier processes on this journal remembered (one controller per table).
PREDECESSORS_KEPT: Final = 16

NOT_CONNECTED_SINCE_START = "not connected since the controller started"
# Issue 11: a checkpoint at the end of each shoe and at least every so many inputs.
CHECKPOINT_EVERY: Final = 1000

__all__ = ["NOT_CONNECTED_SINCE_START", "TableRunner", "table_setup", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _shoe_ended(phase_before: Phase, phase_after: Phase, outputs: list[Output]) -> bool:
    """The input ended a shoe: the cover card's round is over, or a new shoe began."""
    if phase_after is Phase.SHUFFLE_DUE and phase_before is not Phase.SHUFFLE_DUE:
        return True
    return any(isinstance(o, Event) and o.type is EventType.SHOE_STARTED for o in outputs)


class TableRunner(JournalFaults):
    """The table's engine, journal and outbox, and the queues to its devices."""

    def __init__(
        self,
        cfg: TableConfig,
        journal: Journal,
        *,
        clock: Callable[[], datetime] = utc_now,
        checkpoint_every: int = CHECKPOINT_EVERY,
    ) -> None:
        self.cfg = cfg
        self.journal = journal
        self.clock = clock
        self.instance = str(uuid.uuid4())
        # To the millisecond, as status carries it: instances compare their starts.
        now = clock()
        self.started = now.replace(microsecond=now.microsecond // 1000 * 1000)
        self.checkpoint_every = checkpoint_every
        restored = restore(cfg, journal)
        # The instances that held this journal before: it is locked to one process at a
        # time, so none of them runs now. A retained ``status`` of one of them that still
        # says ``online`` (its delayed last will not yet published) is this table's own
        # leftover after a crash, not a second controller (docs/feed.md, one controller per table).
        earlier = journal.meta().get("instances", "")
        self.predecessors = frozenset(filter(None, earlier.split(",")))
        kept = [*earlier.split(",")[-PREDECESSORS_KEPT + 1 :], self.instance]
        journal.set_meta({"instances": ",".join(filter(None, kept))})
        self.replayed = restored.replayed
        self.messages = MessageFactory(
            cfg,
            epoch=journal.epoch,
            last_feed_seq=journal.last_feed_seq(),
            last_hash=last_round_hash(journal),
        )
        self.engine = bind(cfg, journal, restored, self.messages)
        self._since_checkpoint = self.replayed
        snapshot = self.engine.snapshot()
        self._last_state = state_view(snapshot)
        self._last_stats = stats_view(snapshot)
        # Devices heard from (online or offline) since this process started: after
        # a restart the journal tells how the devices were, not that they are
        # connected now, so until then ``status`` shows them offline.
        self._heard: set[str] = set()
        self._last_devices = self.device_status()
        self.console_out: asyncio.Queue[ConsoleReply | ConsoleShow] = asyncio.Queue()
        self.lights_out: asyncio.Queue[SetLights] = asyncio.Queue()
        self.devices_changed = asyncio.Event()
        # Set when state or stats may have changed; the service then calls flush_views.
        self.views_due = asyncio.Event()
        self._views_at: datetime | None = None
        self.inputs_handled = 0
        # Set by the service at a clean stop: every status built from then on says offline.
        self.stopping = False
        # Set by the service: the publisher's wake-up call, its lane for what an input
        # has just committed, its in-memory lane for what must go out while the
        # journal cannot take it, and its lane for the retained views.
        self.wake_publisher: Callable[[], None] = lambda: None
        self.publish_journaled: Callable[[Sequence[OutboxMessage]], None] = lambda msgs: None
        self.publish_unjournaled: Callable[[OutboxMessage], None] = lambda msg: None
        self.publish_view: Callable[[OutboxMessage], None] = lambda msg: None
        # What should be lit, from the state the journal rebuilt: a board powered from this
        # PC lost its lights with it, and nothing else lights it before the game changes
        # them (the war spots of a tie decision, the initial spots of a deal).
        self.lights_mask = self.engine.lights
        self.lights_out.put_nowait(SetLights(self.lights_mask))
        # The serial number of the sensor board in use, once it is found.
        self.board_serial: str | None = None
        # JOURNAL_FAULT (journal_fault.py): what failed, what to redo, what is owed.
        self._init_faults()
        if self.replayed or restored.checkpoint_n is not None:
            log.info(
                "table rebuilt from checkpoint %s and %d journaled inputs: round %s, phase %s",
                restored.checkpoint_n,
                self.replayed,
                self.engine.round_id,
                self.engine.phase,
            )

    # -- the one way in ---------------------------------------------------
    def handle(self, inp: Input) -> bool:
        """Feed one input; journal it with its messages; then act. False: not acted on."""
        if self._read_out_of_turn(inp):
            return False
        # A fault is ended before anything newer is taken: its resolution journaled, then
        # what it held back fed (a device gone, the console's new numbering, the layout),
        # so that this input meets the table as it now is.
        if self.fault is not None and not self.retry_journal():
            self._refuse(inp, self.fault or "", self._answer_again(inp))
            return False
        # What a journal fault left owed goes first.
        refused = self._pay_owed()
        if refused is not None:
            self._refuse(inp, refused.detail, self._answer_again(inp))
            return False
        done = self._commit(inp)
        if isinstance(done, Refused):
            self._refuse(inp, done.detail, done.outputs)
            return False
        self._act(done)
        return True

    def _commit(self, inp: Input) -> Committed | Refused:
        """The engine fed, and the input journaled with its messages; or why not."""
        phase_before = self.engine.phase
        outputs = self.engine.feed(inp)
        feed_before, chain_before = self.messages.feed_seq, self.messages.prev_hash
        messages: list[OutboxMessage] = []
        for out in outputs:
            if isinstance(out, Event):
                messages.extend(self.messages.event(out))
            elif isinstance(out, RoundRecorded):
                messages.append(self.messages.round_record(out, ts=inp.at))
        due = self._since_checkpoint + 1 >= self.checkpoint_every or _shoe_ended(
            phase_before, self.engine.phase, outputs
        )
        # Journal first: nothing is acted on or published before it is durable.
        try:
            # Stamped with the input's own time: the table's clock, which prune compares.
            n = self.journal.record(input_to_json(inp), messages, now=inp.at)
        except JournalFault as exc:
            self.messages.feed_seq, self.messages.prev_hash = feed_before, chain_before
            # The engine never runs ahead of the disk: it took the input, the journal did
            # not, so it is rebuilt as the journal has it (a rare, slow path).
            self.engine = restore(self.cfg, self.journal).engine
            return Refused(str(exc), outputs)
        self._since_checkpoint += 1
        self.inputs_handled += 1
        return Committed(inp, outputs, messages, n if due else None)

    def _answer_again(self, inp: Input) -> list[Output]:
        """What the engine says to a press it has answered already (that answer, from its
        memory): told again even when the journal cannot take the press. The engine is
        rebuilt from the journal after, as after any commit that failed."""
        if not isinstance(inp, ConsolePress) or not self._answered_before(inp):
            return []
        outputs = self.engine.feed(inp)
        self.engine = restore(self.cfg, self.journal).engine
        return outputs

    def _act(self, done: Committed) -> None:
        """What a journaled input says to do: answers, lines and lights, and its messages."""
        inp, outputs, messages = done.inp, done.outputs, done.messages
        if isinstance(inp, SpotsChanged):
            self._spots_missed = None  # a newer layout than the one a fault refused
        for out in outputs:
            if isinstance(out, ConsoleReply | ConsoleShow):
                self.console_out.put_nowait(out)
                if isinstance(out, ConsoleShow) and isinstance(inp, ConsolePress):
                    # A refused press and its hint, in the log too: the dealer's console
                    # may be out of sight of whoever reads it.
                    log.info("console press %s: %s", inp.action, out.text)
            elif isinstance(out, SetLights):
                self.lights_mask = out.mask
                self.lights_out.put_nowait(out)
        if isinstance(inp, DeviceOnline | DeviceOffline):
            self._heard.add(inp.device)
        # Published now, in this turn of the event loop: a card's event waits for
        # no task switch and not for the state to be rebuilt (the views come after).
        if messages:
            self.publish_journaled(messages)
        if done.checkpoint_after is not None:
            self._checkpoint(done.checkpoint_after, inp)
        self._views_at = inp.at
        self.views_due.set()

    def _checkpoint(self, input_n: int, inp: Input) -> None:
        """The state after input ``input_n`` (the engine's now), once its messages are
        out: a shoe's end waits for no serialising of the table (about 0.3 ms). Not
        written, it is tried again after the next input (the input is on the disk)."""
        try:
            self.journal.record_checkpoint(
                input_n, (CHECKPOINT_VERSION, dump_state(self.engine)), now=inp.at
            )
        except JournalFault as exc:
            log.warning(
                "no checkpoint after input %d, tried again after the next: %s", input_n, exc
            )
            self._since_checkpoint = self.checkpoint_every
            return
        self._since_checkpoint = 0

    # -- views ----------------------------------------------------------------
    def flush_views(self) -> None:
        """Send the retained ``state`` and ``stats`` where they changed since last time.

        From memory, not through the journal: the engine, which the journal rebuilds
        at any start, gives them again, so a crash loses none, and the disk (a
        table PC's flash) is spared two writes an input."""
        self.views_due.clear()
        state = self.engine.snapshot()
        # The devices' state as well, for the status: off the input's path too.
        devices = self.device_status(state)
        if devices != self._last_devices:
            self._last_devices = devices
            self.devices_changed.set()
        ts = self._views_at or self.clock()
        view = state_view(state)
        if view != self._last_state:
            self._last_state = view
            self.publish_view(self.messages.state(view, ts=ts))
        stats = stats_view(state)
        if stats != self._last_stats:
            self._last_stats = stats
            self.publish_view(self.messages.stats(stats, ts=ts))

    # -- status ------------------------------------------------------------
    def device_status(self, state: EngineSnapshot | None = None) -> dict[str, dict[str, Any]]:
        """The ``devices`` of ``status``: the engine's view of each device (in ``state``,
        or now), but offline until this process has heard from it."""
        devices = device_states(self.engine.snapshot() if state is None else state)
        for name, dev in devices.items():
            if name not in self._heard and dev["state"] != "offline":
                devices[name] = {"state": "offline", "detail": NOT_CONNECTED_SINCE_START}
        sensors = devices["sensors"]
        if sensors["state"] == "ok" and self.board_serial is not None:
            # Which board the table takes as its sensor board (a pinned serial or not).
            sensors["detail"] = f"serial {self.board_serial}"
        return devices

    def status_payload(self, *, online: bool = True) -> dict[str, Any]:
        now = self.clock()
        age = self.journal.oldest_pending_age_s(now)
        return {
            "online": online and not self.stopping,
            "version": __version__,
            "rules": self.cfg.rules.name.value,
            "decks": self.engine.setup.decks,
            "positions": self.engine.setup.positions,
            "devices": self.device_status(),
            "outbox": {
                "depth": self.journal.outbox_depth(),
                "oldest_age_s": None if age is None else round(age, 1),
            },
            "currency": self.cfg.table.currency,
            "instance": self.instance,
            "started": self.started,
            "journal": {"state": "ok", "detail": None}
            if self.fault is None
            else {"state": "fault", "detail": self.fault[:1000]},
            "feed": {"epoch": self.journal.epoch, "last_feed_seq": self.messages.feed_seq},
        }

    def status_message(self, *, online: bool = True) -> OutboxMessage:
        return self.messages.status(self.status_payload(online=online), ts=self.clock())

    def enqueue_status(self) -> None:
        msg = self.status_message()
        try:
            self.journal.enqueue([msg], synced=False)
        except JournalFault:
            self.publish_unjournaled(msg)
        self.wake_publisher()

    def on_broker_connect(self) -> None:
        """docs/feed.md: status on every connect; state and stats too, so that a table
        that has just started (or a broker that lost its retained messages)
        shows its phase before anything changes."""
        now = self.clock()
        status = self.status_message()
        try:
            self.journal.enqueue([status], synced=False)
        except JournalFault:
            self.publish_unjournaled(status)
        self.publish_view(self.messages.state(self._last_state, ts=now))
        self.publish_view(self.messages.stats(self._last_stats, ts=now))
        self.wake_publisher()
