"""The runner: the one place that feeds the engine and carries out what it says.

Every input goes through :meth:`TableRunner.handle`, which

1. runs the pure engine (``transition``),
2. turns its outputs into outbox messages (events, alerts, round records),
3. commits the input and those messages to the journal in ONE transaction,
4. and only then acts: console answers, display lines and layout lights go to
   the device tasks' queues, and the publisher is woken.

``handle`` never awaits: device tasks call it as events arrive, so inputs are
serialised by the event loop and the game never waits for the network.

The retained ``state`` and ``stats`` (latest value wins, MQTT.md) are built
apart, by :meth:`TableRunner.flush_views`, which the service calls once the
inputs that arrived together are handled: building them is most of the work
of an input, and a card's event should not wait for it. They too are in the
outbox before they are published.

On start the journal's inputs are replayed through a fresh engine, which
rebuilds the table exactly (GAME.md: everything is rebuilt from the journal);
the replay's outputs are already in the outbox and are not enqueued again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from table_controller import __version__
from table_controller.engine import (
    ConsoleReply,
    ConsoleShow,
    DeviceOffline,
    DeviceOnline,
    Event,
    Input,
    RoundEngine,
    RoundRecorded,
    SetLights,
    TableSetup,
    device_states,
    input_from_json,
    input_to_json,
    state_view,
    stats_view,
)
from table_controller.feed.messages import MessageFactory
from table_controller.service.config import TableConfig, overrides_of
from table_controller.service.journal import Journal, OutboxMessage

log = logging.getLogger(__name__)

NOT_CONNECTED_SINCE_START = "not connected since the controller started"


def utc_now() -> datetime:
    return datetime.now(UTC)


def table_setup(cfg: TableConfig) -> TableSetup:
    return TableSetup(
        rules=cfg.rules,
        decks=cfg.decks,
        positions=cfg.table.positions,
        limits=cfg.table.limits,
        overrides=overrides_of(cfg),
    )


def rebuild(cfg: TableConfig, journal: Journal) -> tuple[RoundEngine, int]:
    """A fresh engine fed every journaled input; also how many there were."""
    engine = RoundEngine(table_setup(cfg))
    count = 0
    for row in journal.inputs():
        engine.feed(input_from_json(row))
        count += 1
    return engine, count


class TableRunner:
    """The table's engine, journal and outbox, and the queues to its devices."""

    def __init__(
        self,
        cfg: TableConfig,
        journal: Journal,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.cfg = cfg
        self.journal = journal
        self.clock = clock
        self.engine, self.replayed = rebuild(cfg, journal)
        self.messages = MessageFactory(cfg, epoch=journal.epoch)
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
        # Set by the service: the publisher's wake-up call.
        self.wake_publisher: Callable[[], None] = lambda: None
        # A newly connected lights task needs to know what should be lit.
        self.lights_mask = 0
        if self.replayed:
            log.info(
                "table rebuilt from %d journaled inputs: round %s, phase %s",
                self.replayed,
                self.engine.round_id,
                self.engine.phase,
            )

    # -- the one way in ---------------------------------------------------
    def handle(self, inp: Input) -> None:
        """Feed one input; journal it with its messages; then act."""
        outputs = self.engine.feed(inp)
        messages: list[OutboxMessage] = []
        for out in outputs:
            if isinstance(out, Event):
                messages.extend(self.messages.event(out))
            elif isinstance(out, RoundRecorded):
                messages.append(self.messages.round_record(out, ts=inp.at))
        # Journal first: nothing is acted on or published before it is durable.
        self.journal.record(input_to_json(inp), messages)
        self.inputs_handled += 1
        for out in outputs:
            if isinstance(out, ConsoleReply | ConsoleShow):
                self.console_out.put_nowait(out)
            elif isinstance(out, SetLights):
                self.lights_mask = out.mask
                self.lights_out.put_nowait(out)
        if isinstance(inp, DeviceOnline | DeviceOffline):
            self._heard.add(inp.device)
        devices = self.device_status()
        if devices != self._last_devices:
            self._last_devices = devices
            self.devices_changed.set()
        # The publisher first: its task then runs before the views task, so a
        # card's event does not wait for the state to be rebuilt.
        if messages:
            self.wake_publisher()
        self._views_at = inp.at
        self.views_due.set()

    def flush_views(self) -> None:
        """Enqueue the retained ``state`` and ``stats`` where they changed since last time."""
        self.views_due.clear()
        state = self.engine.snapshot()
        ts = self._views_at or self.clock()
        messages: list[OutboxMessage] = []
        view = state_view(state)
        if view != self._last_state:
            self._last_state = view
            messages.append(self.messages.state(view, ts=ts))
        stats = stats_view(state)
        if stats != self._last_stats:
            self._last_stats = stats
            messages.append(self.messages.stats(stats, ts=ts))
        if messages:
            self.journal.enqueue(messages)
            self.wake_publisher()

    # -- status ------------------------------------------------------------
    def device_status(self) -> dict[str, dict[str, Any]]:
        """The ``devices`` of ``status``: the engine's view of each device, but offline
        until this process has heard from it."""
        devices = device_states(self.engine.snapshot())
        for name, dev in devices.items():
            if name not in self._heard and dev["state"] != "offline":
                devices[name] = {"state": "offline", "detail": NOT_CONNECTED_SINCE_START}
        return devices

    def status_payload(self, *, online: bool = True) -> dict[str, Any]:
        now = self.clock()
        age = self.journal.oldest_pending_age_s(now)
        return {
            "online": online,
            "version": __version__,
            "rules": self.cfg.rules.name.value,
            "decks": self.cfg.decks,
            "positions": self.cfg.table.positions,
            "devices": self.device_status(),
            "outbox": {
                "depth": self.journal.outbox_depth(),
                "oldest_age_s": None if age is None else round(age, 1),
            },
        }

    def status_message(self, *, online: bool = True) -> OutboxMessage:
        return self.messages.status(self.status_payload(online=online), ts=self.clock())

    def enqueue_status(self) -> None:
        self.journal.enqueue([self.status_message()])
        self.wake_publisher()

    def on_broker_connect(self) -> None:
        """MQTT.md: status on every connect; state and stats too, so that a table
        that has just started (or a broker that lost its retained messages)
        shows its phase before anything changes."""
        now = self.clock()
        self.journal.enqueue(
            [
                self.status_message(),
                self.messages.state(self._last_state, ts=now),
                self.messages.stats(self._last_stats, ts=now),
            ]
        )
        self.wake_publisher()
