"""One light table of ``bench.tables``, and the worker process that runs many of them.

A light table is the real message path of a controller from the engine on, wired
by :func:`table_controller.service.compose.compose` exactly as ``run`` wires it:
the runner (engine, message factory, journal and outbox, one commit per input),
the publisher (its own MQTT 5 connection, QoS 1, PUBACKs awaited, the retained
last will) and the inbox. :class:`bench.feeder.Feeder` stands in for the
devices, one input every ``pace`` seconds (jittered).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from bench.feeder import Feeder
from table_controller.engine import ConsoleReply
from table_controller.service.compose import compose
from table_controller.service.config import parse_config
from table_controller.service.journal import Journal, OutboxMessage

SITE: Final = "bench"
DECKS: Final = 6
POSITIONS: Final = 7
CONNECT_WAIT_S: Final = 60.0


class CountingJournal(Journal):
    """The real journal, noting which messages were enqueued and which the broker took."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.kinds: dict[str, str] = {}
        self.enqueued: Counter[str] = Counter()
        self.sent: dict[str, list[str]] = {}

    def _note(self, messages: Sequence[OutboxMessage]) -> None:
        for msg in messages:
            kind = msg.topic.rsplit("/", 1)[-1]
            self.kinds[msg.id] = kind
            self.enqueued[kind] += 1

    def record(
        self,
        input_json: Mapping[str, Any],
        messages: Sequence[OutboxMessage],
        *,
        now: datetime | None = None,
    ) -> int:
        n = super().record(input_json, messages, now=now)
        self._note(messages)
        return n

    def enqueue(
        self,
        messages: Sequence[OutboxMessage],
        *,
        now: datetime | None = None,
        synced: bool = True,
    ) -> None:
        super().enqueue(messages, now=now, synced=synced)
        self._note(messages)

    def mark_sent(self, ids: Sequence[str], *, now: datetime | None = None) -> None:
        super().mark_sent(ids, now=now)
        for id_ in ids:
            self.sent.setdefault(self.kinds.get(id_, "?"), []).append(id_)


def table_config(table_id: str, broker_url: str, storage: Path) -> dict[str, Any]:
    """A table's config; the device URLs are never opened (the dealer loop stands in)."""
    return {
        "table": {"id": table_id, "site": SITE, "rules": "ny", "decks": DECKS},
        "devices": {
            "shoe": "socket://127.0.0.1:9",
            "console": "socket://127.0.0.1:9",
            "sensors": "simusb://127.0.0.1:9",
        },
        "mqtt": {"url": broker_url},
        "storage": {"path": str(storage)},
    }


class LightTable:
    """The runner, journal and publisher of one table, and a dealer loop feeding it."""

    def __init__(self, table_id: str, broker_url: str, workdir: Path, seed: int) -> None:
        self.table_id = table_id
        self.cfg = parse_config(table_config(table_id, broker_url, workdir / f"{table_id}.sqlite3"))
        self.journal = CountingJournal(self.cfg.storage.path)
        self.connected = asyncio.Event()
        table = compose(self.cfg, self.journal, on_connect=self._on_connect)
        self.runner, self.publisher = table.runner, table.publisher
        self.rng = random.Random(seed)
        self.feeder = Feeder(table_id, lambda: self.runner.engine.snapshot(), seed=seed)
        self.inputs = 0
        self.naks = 0

    @property
    def rounds(self) -> int:
        return self.feeder.rounds

    def _on_connect(self) -> None:
        self.runner.on_broker_connect()  # docs/feed.md: status on every connect
        self.connected.set()

    async def play(self, rounds: int, pace_s: float) -> None:
        """``rounds`` whole rounds at seven positions, one input every ``pace_s`` or so."""
        for inp in self.feeder.play(rounds):
            self.runner.handle(inp)
            self.runner.flush_views()  # as the service's views task does
            self.inputs += 1
            # The device queues the service's tasks would drain: answers and lights.
            while not self.runner.console_out.empty():
                out = self.runner.console_out.get_nowait()
                if isinstance(out, ConsoleReply) and out.reason is not None:
                    self.naks += 1
            while not self.runner.lights_out.empty():
                self.runner.lights_out.get_nowait()
            await asyncio.sleep(pace_s * self.rng.uniform(0.5, 1.5))

    def result(self) -> dict[str, Any]:
        return {
            "table": self.table_id,
            "rounds": self.rounds,
            "inputs": self.inputs,
            "naks": self.naks,
            "enqueued": dict(self.journal.enqueued),
            "sent": self.journal.sent,
            "outbox_depth": self.journal.outbox_depth(),
        }


async def run_worker(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Play the given tables; return what each enqueued and what the broker acknowledged."""
    deadline = time.monotonic() + float(spec["timeout_s"])
    workdir = Path(spec["workdir"])
    tables = [
        LightTable(table_id, spec["broker"], workdir, int(spec["seed"]) * 100_000 + i)
        for i, table_id in enumerate(spec["tables"])
    ]
    publishers = [
        asyncio.create_task(t.publisher.run(), name=f"publisher-{t.table_id}") for t in tables
    ]
    try:
        async with asyncio.timeout(CONNECT_WAIT_S):
            for t in tables:
                await t.connected.wait()
        start = time.perf_counter()
        cpu_start = time.process_time()
        remaining = max(1.0, deadline - time.monotonic())
        async with asyncio.timeout(remaining):
            await asyncio.gather(
                *(t.play(int(spec["rounds"]), float(spec["pace_s"])) for t in tables)
            )
            played_s = time.perf_counter() - start
            for t in tables:
                await t.publisher.drained()
        drained_s = time.perf_counter() - start
        cpu_s = time.process_time() - cpu_start
        return {
            "tables": [t.result() for t in tables],
            "played_s": round(played_s, 3),
            "drained_s": round(drained_s, 3),
            "cpu_s": round(cpu_s, 3),
        }
    finally:
        for task in publishers:
            task.cancel()
        for task in publishers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for t in tables:
            t.journal.close()


def worker_main(spec_json: str, out: Path) -> int:
    spec = json.loads(spec_json)
    result = asyncio.run(run_worker(spec))
    out.write_text(json.dumps(result), encoding="utf-8")
    return 0
