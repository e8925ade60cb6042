"""``table-controller run --config table.toml``: the production service.

One asyncio ``TaskGroup`` at the root owns every task: the three device tasks,
the publisher, the status task and the systemd watchdog. SIGTERM and SIGINT
stop it cleanly: the final ``status`` (``online: false``) is published when the
broker is there, then the connection closes normally so the broker drops the
last will.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from table_controller.engine import ConsoleShow, native
from table_controller.service.compose import compose
from table_controller.service.config import ConfigError, TableConfig, load_config
from table_controller.service.devices import console_task, sensors_task, shoe_task
from table_controller.service.errors import (
    EXIT_CONFIG,
    EXIT_IDENTITY,
    EXIT_JOURNAL,
    IdentityYielded,
    JournalError,
    JournalFault,
)
from table_controller.service.journal import Journal
from table_controller.service.publisher import PublisherConfigError
from table_controller.service.sdnotify import notify, watchdog_interval_s

log = logging.getLogger(__name__)

STATUS_INTERVAL_S = 1.0
"""docs/feed.md: status when the outbox figures change, at most once a second."""
FINAL_STATUS_TIMEOUT_S = 3.0
JOURNAL_RETRY_S = 1.0
"""docs/rules.md JOURNAL_FAULT: how often a faulty journal is tried again."""
PRUNE_INTERVAL_S = 60.0


class TableService:
    """The table controller: devices → engine → journal → MQTT, under one TaskGroup."""

    def __init__(self, cfg: TableConfig) -> None:
        self.cfg = cfg
        cfg.storage.path.parent.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(cfg.storage.path)
        try:
            table = compose(
                cfg,
                self.journal,
                on_connect=self._on_connect,
                on_yield=self._yield,
                on_identity_conflict=self._identity_conflict,
            )
        except BaseException:
            self.journal.close()
            raise
        self.runner, self.publisher, self.inbox = table.runner, table.publisher, table.inbox
        self.ready = asyncio.Event()
        # docs/feed.md, one controller per table: set when this one yields to an earlier one.
        self.yielded: str | None = None
        self._stop: asyncio.Event | None = None
        self.stopping = False
        # The devices and outbox figures of the last status the status task
        # enqueued; None: enqueue the current ones at its next look.
        self._status_figures: dict[str, object] | None = None

    def _on_connect(self) -> None:
        # docs/feed.md: status on every connect. At a clean stop the publisher connects
        # once more only to say the table is offline; an "online" status enqueued
        # then would replace that unsent retained value in the outbox.
        if self.stopping:
            self._enqueue_final_status()
        else:
            self.runner.on_broker_connect()
            # That status queues behind any backlog (journal.py), so its outbox
            # figures are stale when it goes out: the status task sends them again.
            self._status_figures = None

    def _enqueue_final_status(self) -> None:
        msg = self.runner.status_message(online=False)
        try:
            self.journal.enqueue([msg])
        except JournalFault:
            # The journal cannot take it (docs/rules.md JOURNAL_FAULT): out from memory.
            self.publisher.offer(msg)
        self.publisher.wake()

    def _yield(self, detail: str) -> None:
        """Another controller of this table started earlier: stop publishing and exit."""
        if self.yielded is not None:
            return
        self.yielded = detail
        log.critical("IDENTITY_CONFLICT: %s", detail)
        self.runner.console_out.put_nowait(ConsoleShow("IDENTITY CONFLICT: CALL TECH"))
        self.publisher.halt()
        if self._stop is not None:
            self._stop.set()

    def _identity_conflict(self, detail: str) -> None:
        log.error(
            "another client uses this table's identity %r on the broker (%s): "
            "check that no second controller runs as this table",
            self.cfg.table.id,
            detail,
        )

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run until ``stop`` is set (or the task is cancelled); then say the table is offline.

        With ``stop``, the devices stop first and the final status goes out on
        the live connection once everything before it is acknowledged, then the
        connection closes normally (the broker drops the last will). Cancelled
        instead, the final status goes out on a fresh connection.
        """
        stop = stop or asyncio.Event()
        self._stop = stop
        try:
            async with asyncio.TaskGroup() as tg:
                devices = self.cfg.devices
                publisher = tg.create_task(self.publisher.run(), name="publisher")
                workers = [
                    tg.create_task(shoe_task(self.runner, devices.shoe), name="shoe"),
                    tg.create_task(console_task(self.runner, devices.console), name="console"),
                    tg.create_task(sensors_task(self.runner, devices.sensors), name="sensors"),
                    tg.create_task(self._status_task(), name="status"),
                    tg.create_task(self._views_task(), name="views"),
                    tg.create_task(self._journal_fault_task(), name="journal-fault"),
                    tg.create_task(self._prune_task(), name="prune"),
                ]
                interval = watchdog_interval_s()
                if interval is not None:
                    workers.append(tg.create_task(self._watchdog_task(interval), name="watchdog"))
                self.ready.set()
                notify("READY=1")
                log.info(
                    "table %s at %s running %s rules, %d decks, %d positions (engine %s)",
                    self.cfg.table.id,
                    self.cfg.table.site,
                    self.cfg.rules.name.value,
                    self.cfg.decks,
                    self.cfg.table.positions,
                    native.mode(),
                )
                await stop.wait()
                notify("STOPPING=1")
                self.stopping = self.runner.stopping = True
                for task in workers:
                    task.cancel()
                if self.yielded is not None:
                    # The other controller owns the table's status: publish nothing more.
                    publisher.cancel()
                    return
                self.runner.flush_views()
                self._enqueue_final_status()
                try:
                    # Everything before the final status acknowledged: a disconnect with
                    # publishes in flight makes some brokers publish the will as well.
                    async with asyncio.timeout(FINAL_STATUS_TIMEOUT_S):
                        await self.publisher.drained()
                except TimeoutError:
                    log.warning(
                        "final status not acknowledged by the broker; it stays in the outbox, "
                        "and the last will reports the table offline"
                    )
                    self.publisher.leave_will()
                publisher.cancel()
        except asyncio.CancelledError:
            notify("STOPPING=1")
            await self._final_status()
            raise
        finally:
            self.journal.close()

    async def _final_status(self) -> None:
        """Publish ``online: false`` through the outbox, briefly, before the service exits."""
        self.stopping = self.runner.stopping = True
        self.runner.flush_views()
        self._enqueue_final_status()
        publisher_task = asyncio.create_task(self.publisher.run(), name="publisher-final")
        try:
            async with asyncio.timeout(FINAL_STATUS_TIMEOUT_S):
                await self.publisher.drained()
        except TimeoutError:
            log.warning("broker not reached: the last will reports the table offline")
            self.publisher.leave_will()
        finally:
            publisher_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await publisher_task

    async def _status_task(self) -> None:
        """Publish status when a device's state, the outbox figures or the feed's last
        ``feed_seq`` change: at most once a second, so that a recorder that missed the
        table's last messages finds them named in the retained status (docs/feed.md)."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STATUS_INTERVAL_S):
                    await self.runner.devices_changed.wait()
            self.runner.devices_changed.clear()
            payload = self.runner.status_payload()
            figures = {k: payload[k] for k in ("devices", "outbox", "feed")}
            if figures != self._status_figures:
                self._status_figures = figures
                self.runner.enqueue_status()

    async def _views_task(self) -> None:
        """The retained state and stats, after the inputs that arrived together."""
        while True:
            await self.runner.views_due.wait()
            self.runner.flush_views()

    async def _journal_fault_task(self) -> None:
        """docs/rules.md JOURNAL_FAULT: the table recovers by itself once commits succeed."""
        while True:
            await self.runner.fault_raised.wait()
            while not self.runner.retry_journal():  # noqa: ASYNC110 (polls the disk)
                await asyncio.sleep(JOURNAL_RETRY_S)

    async def _prune_task(self) -> None:
        """Bounded disk (``[storage] keep_days`` and ``prune``)."""
        storage = self.cfg.storage
        while True:
            try:
                self.journal.prune(
                    keep_days=storage.keep_days, mode=storage.prune, recorders=storage.recorders
                )
            except JournalFault as exc:
                log.warning("journal not pruned: %s", exc)
            await asyncio.sleep(PRUNE_INTERVAL_S)

    async def _watchdog_task(self, interval_s: float) -> None:
        # Pinged from the event loop, so a stalled loop stops the pings and
        # systemd restarts the service.
        while True:
            notify("WATCHDOG=1")
            await asyncio.sleep(interval_s)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, type=Path, help="table config (TOML)")
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level (stderr)",
    )


async def serve(cfg: TableConfig, *, stop: asyncio.Event | None = None) -> None:
    """Run the service until ``stop`` is set, SIGTERM or SIGINT.

    Raises :class:`IdentityYielded` when it yielded to an earlier controller of its table.
    """
    service = TableService(cfg)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        await service.run(stop)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    if service.yielded is not None:
        raise IdentityYielded(service.yielded)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"table-controller: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        asyncio.run(serve(cfg))
    except IdentityYielded as exc:
        print(f"table-controller: {exc}", file=sys.stderr)
        return EXIT_IDENTITY
    except PublisherConfigError as exc:
        print(f"table-controller: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except JournalFault as exc:
        # Disk full or an I/O error at start: a restart may succeed once there is room.
        print(f"table-controller: {exc}", file=sys.stderr)
        return 1
    except JournalError as exc:
        # Damaged, held by another process, or another table's: restarting cannot help
        # (the unit's RestartPreventExitStatus names this status).
        print(f"table-controller: {exc}", file=sys.stderr)
        return EXIT_JOURNAL
    return 0
