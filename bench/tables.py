"""Many tables on one broker: messages per second through Mosquitto into the pit, and none lost.

``python -m bench.tables`` runs, for each ``--tables`` count (50 and 200 by
default), a fresh Mosquitto on loopback carrying that many simulated tables at
an accelerated pace while the pit display consumes everything they publish.

The tables are light: no device simulators, no serial links. Each is the real
message path of a controller from the engine on: a
:class:`~table_controller.service.runner.TableRunner` (the engine, the
:class:`~table_controller.feed.messages.MessageFactory` with its payload models, a
SQLite :class:`~table_controller.service.journal.Journal` with its outbox, input and
messages committed in one transaction) and a
:class:`~table_controller.service.publisher.Publisher` with its own MQTT 5 connection
(client id = table id, QoS 1, PUBACKs awaited, the retained last will). A
dealer loop feeds each runner what its devices would: devices online,
``SHUFFLED``, the dealer, a seeded layout of wagers on seven positions with
chip values, ``NO_MORE_BETS``, card reads from a seeded shoe with its cover
card, war chips and ``WAR`` or ``SURRENDER`` on ties; one input every
``--pace`` seconds per table (jittered), some seventy times a live table's
pace. The tables run in ``--workers`` child processes (``python -m
bench.tables --worker``; by default one fewer than the cores, leaving one for
the pit); the pit has this process.

The pit side is the pit display's model and client settings: one aiomqtt
subscriber (MQTT 5, QoS 1, on ``casino/#``, with the pit display's bound of
10,000 queued incoming messages, beyond which a lagging pit discards messages;
each discard is counted) feeding a :class:`~table_controller.pit.display.PitModel`.
A thin subclass of the model notes each message's ``id`` and arrival time.
The ``rich`` view is not redrawn during the run; the time to draw it once for
all the tables at the end is reported as ``pit_view_render_s``. With
``--view`` the pit is instead :func:`table_controller.pit.display.watch` itself,
redrawing its live view (at most every 0.25 s) on a terminal console that
writes nowhere, as the pit display runs.

Lost = expected − received, de-duplicated by ``id``, where expected is every
message a publisher saw acknowledged by the broker (PUBACK below 0x80), and
every non-retained message (events, rounds, alerts) a table enqueued must be
among them (the outbox rules let only retained values be replaced before they
are sent). Journals go to ``--journal-dir`` (``/dev/shm`` by default): one
disk's fsync shared by 200 simulated tables would measure that disk, not the
broker; each real table has its own.

It prints the figures and writes ``bench/results/tables.json``. ``--quick`` is
a tiny run for the smoke test. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
from rich.console import Console

from bench.latency import RESULTS_DIR, BenchError, machine, now_iso, write_results
from table_controller.engine import (
    DECK,
    CardRead,
    ConsolePress,
    ConsoleReply,
    CoverRead,
    DeviceOnline,
    Input,
    Outcome,
    Phase,
    SpotsChanged,
    spot_bit,
)
from table_controller.engine.inputs import DEVICE_NAMES
from table_controller.pit.display import (
    KEEPALIVE_S,
    MAX_QUEUED_MESSAGES,
    BrokerLink,
    PitModel,
    render,
    watch,
)
from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.config import parse_config
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.publisher import Publisher
from table_controller.service.runner import TableRunner

RESULTS = RESULTS_DIR / "tables.json"
TABLE_COUNTS = (50, 200)
TARGET_TABLES = 200
POSITIONS = 7
DECKS = 6
ROUNDS = 20
PACE_S = 0.05
"""Seconds between one table's inputs (jittered ±50 %). A round here is about eleven
inputs, so about 0.55 s when the pace is kept; a live round takes some 40 s."""
QUICK_TABLES = (2,)
QUICK_ROUNDS = 2
QUICK_PACE_S = 0.01
SITE = "bench"
CONNECT_WAIT_S = 60.0
DRAIN_WAIT_S = 120.0
"""After the last worker finished: how long the pit may take to receive the rest."""
QUIET_S = 15.0
"""...unless nothing at all arrives for this long."""
PIT_FILTER = "casino/#"
RUN_TIMEOUT_S = 900.0
STEPS_PER_ROUND = 64
"""A round is at most 1 + P + 1 + 3 + P + 1 cards, a cover card and P decisions."""
BETS = (500, 1000, 2500, 10000)
TIE_BETS = (100, 500)
NON_RETAINED = ("events", "rounds", "alerts")


# ---------------------------------------------------------------- a light table


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

    def enqueue(self, messages: Sequence[OutboxMessage], *, now: datetime | None = None) -> None:
        super().enqueue(messages, now=now)
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
        self.runner = TableRunner(self.cfg, self.journal)
        self.connected = asyncio.Event()
        self.publisher = Publisher(
            self.cfg.mqtt,
            client_id=table_id,
            journal=self.journal,
            will=lambda: self.runner.status_message(online=False),
            on_connect=self._on_connect,
        )
        self.runner.wake_publisher = self.publisher.wake
        self.rng = random.Random(seed)
        self.k = 0
        self.n = 0
        self.inputs = 0
        self.naks = 0
        self.rounds = 0
        self.shoe: list[str] = []
        self.cover_at = 0
        self.chips: dict[int, int] = {}

    def _on_connect(self) -> None:
        self.runner.enqueue_status()  # MQTT.md: status on every connect
        self.connected.set()

    # -- feeding the runner ---------------------------------------------------------

    async def _feed(self, inp: Input, pace_s: float) -> None:
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

    async def _press(self, action: str, arg: str | None, pace_s: float) -> None:
        self.k += 1
        await self._feed(ConsolePress(datetime.now(UTC), self.k, action, arg), pace_s)

    async def _layout(self, pace_s: float) -> None:
        present = 0
        for bit in self.chips:
            present |= 1 << bit
        values = tuple(sorted(self.chips.items()))
        await self._feed(SpotsChanged(datetime.now(UTC), present, 0, values), pace_s)

    async def _new_shoe(self, pace_s: float) -> None:
        self.shoe = list(DECK) * DECKS
        self.rng.shuffle(self.shoe)
        self.cover_at = len(self.shoe) // 4  # cards left when the cover card comes (75 %)
        await self._press("SHUFFLED", None, pace_s)

    async def _next_card(self, pace_s: float) -> None:
        state = self.runner.engine.snapshot()
        if len(self.shoe) == self.cover_at and not state.shoe.cover_seen:
            self.n += 1
            await self._feed(CoverRead(datetime.now(UTC), self.n), pace_s)
        self.n += 1
        await self._feed(CardRead(datetime.now(UTC), self.n, self.shoe.pop()), pace_s)

    async def _decide(self, pace_s: float) -> None:
        state = self.runner.engine.snapshot()
        tied = [h for h in state.round.hands if h.outcome is Outcome.TIE and h.decision is None]
        war = [h for h in tied if self.rng.random() < 0.5]
        for h in war:
            self.chips[spot_bit(h.position, 2)] = h.initial.amount or BETS[0]
        if war:
            await self._layout(pace_s)
        for h in tied:
            await self._press("WAR" if h in war else "SURRENDER", str(h.position), pace_s)

    async def play(self, rounds: int, pace_s: float) -> None:
        """``rounds`` whole rounds at seven positions, one input every ``pace_s`` or so."""
        for device in DEVICE_NAMES:
            await self._feed(DeviceOnline(datetime.now(UTC), device), pace_s)
        await self._new_shoe(pace_s)
        await self._press("DEALER", f"D-{self.table_id}", pace_s)
        for _ in range(rounds):
            if self.runner.engine.snapshot().phase is Phase.SHUFFLE_DUE:
                await self._new_shoe(pace_s)
            self.chips = {}
            for p in range(1, POSITIONS + 1):
                if self.rng.random() < 0.85:
                    self.chips[spot_bit(p, 0)] = self.rng.choice(BETS)
                    if self.rng.random() < 0.3:
                        self.chips[spot_bit(p, 1)] = self.rng.choice(TIE_BETS)
            if not self.chips:
                self.chips[spot_bit(1, 0)] = BETS[0]
            await self._layout(pace_s)
            await self._press("NO_MORE_BETS", None, pace_s)
            before = self.runner.engine.snapshot().stats.rounds
            for _ in range(STEPS_PER_ROUND):
                state = self.runner.engine.snapshot()
                if state.stats.rounds != before:
                    break
                if state.held:
                    raise BenchError(f"{self.table_id}: round held by {state.alerts.open}")
                if state.phase is Phase.TIE_DECISION:
                    await self._decide(pace_s)
                else:
                    await self._next_card(pace_s)
            else:
                raise BenchError(f"{self.table_id}: the round did not end")
            self.rounds += 1

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


# ---------------------------------------------------------------- a worker process


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


# ---------------------------------------------------------------- the pit side


class CountingPitModel(PitModel):
    """The pit's model, noting every message's ``id`` and when the messages came."""

    def __init__(self) -> None:
        super().__init__()
        self.deliveries = 0
        self.received: set[str] = set()
        self.first: float | None = None
        self.last: float | None = None
        self.missing: set[str] | None = None
        self.complete = asyncio.Event()

    def feed(self, topic: str, payload: bytes) -> bool:
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        self.last = now
        self.deliveries += 1
        try:
            msg_id = json.loads(payload).get("id")
        except (ValueError, AttributeError):
            msg_id = None
        if isinstance(msg_id, str):
            self.received.add(msg_id)
            if self.missing is not None:
                self.missing.discard(msg_id)
                if not self.missing:
                    self.complete.set()
        return super().feed(topic, payload)

    def expect(self, ids: set[str]) -> None:
        """From now on ``complete`` is set once every id in ``ids`` was received."""
        self.missing = ids - self.received
        if not self.missing:
            self.complete.set()


class Nowhere(io.StringIO):
    """A text stream that keeps nothing (the pit's screen, unseen)."""

    def write(self, text: str) -> int:
        return len(text)


async def wait_complete(model: CountingPitModel) -> None:
    """Until every expected message came, nothing came for ``QUIET_S``, or ``DRAIN_WAIT_S``."""
    give_up = time.monotonic() + DRAIN_WAIT_S
    seen = -1
    while not model.complete.is_set() and time.monotonic() < give_up:
        if model.deliveries == seen:
            return  # quiet for QUIET_S: what is missing is not coming
        seen = model.deliveries
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(QUIET_S):
                await model.complete.wait()


class DiscardCounter(logging.Handler):
    """Counts the subscriber's "queue is full" discards (aiomqtt logs each one)."""

    def __init__(self) -> None:
        super().__init__()
        self.discarded = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "Discarding message" in record.getMessage():
            self.discarded += 1


async def pit_subscriber(
    broker: MosquittoBroker,
    model: PitModel,
    subscribed: asyncio.Event,
    logger: logging.Logger,
) -> None:
    """One MQTT 5 subscriber feeding the pit's model, as the pit display's client does
    (the same incoming queue bound: a pit that falls that far behind drops messages)."""
    async with aiomqtt.Client(
        broker.host,
        broker.port,
        logger=logger,
        identifier=f"pit-bench-{uuid.uuid4().hex[:8]}",
        protocol=aiomqtt.ProtocolVersion.V5,
        keepalive=KEEPALIVE_S,
        max_queued_incoming_messages=MAX_QUEUED_MESSAGES,
    ) as client:
        await client.subscribe(PIT_FILTER, qos=1)
        subscribed.set()
        async for message in client.messages:
            payload = message.payload
            data = bytes(payload) if isinstance(payload, bytes | bytearray) else b""
            model.feed(message.topic.value, data)


def time_render(model: PitModel) -> float:
    """Seconds to draw the pit's whole view of ``model`` once on a terminal (160 × 60)."""
    console = Console(file=Nowhere(), force_terminal=True, width=160, height=60)
    start = time.perf_counter()
    console.print(render(model))
    return round(time.perf_counter() - start, 3)


def mosquitto_cpu_s(config_path: Path) -> float | None:
    """CPU seconds (user + system) of the mosquitto started with ``config_path``."""
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            if str(config_path).encode() not in cmdline:
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # Fields after the command name: state is [0], utime [11], stime [12].
        return (int(fields[11]) + int(fields[12])) / tick
    return None


async def run_tables(
    broker: MosquittoBroker,
    count: int,
    *,
    rounds: int,
    pace_s: float,
    workers: int,
    journal_dir: Path,
    seed: int,
    timeout_s: float,
    view: bool = False,
) -> dict[str, Any]:
    """``count`` tables in ``workers`` processes, the pit here; the figures.

    With ``view`` the pit is :func:`~table_controller.pit.display.watch` itself, redrawing its
    live view on a terminal console that writes nowhere, instead of the bare model.
    """
    model = CountingPitModel()
    subscribed = asyncio.Event()
    stop = asyncio.Event()
    # The subscriber's log (the pit display's client logs to aiomqtt's "mqtt" logger),
    # kept apart: each discarded message is counted, not printed.
    logger = logging.getLogger("mqtt" if view else f"bench.tables.pit.{count}")
    logger.propagate = False
    discards = DiscardCounter()
    logger.addHandler(discards)

    def on_update(m: PitModel) -> None:
        if m.connection.state is BrokerLink.CONNECTED:
            subscribed.set()

    ids = [f"war-{i:03d}" for i in range(1, count + 1)]
    shares = [ids[w::workers] for w in range(workers) if ids[w::workers]]
    with tempfile.TemporaryDirectory(prefix="bench-tables-", dir=journal_dir) as tmp:
        if view:
            console = Console(file=Nowhere(), force_terminal=True, width=160, height=60)
            pit = asyncio.create_task(
                watch(
                    broker.url, None, console=console, stop=stop, model=model, on_update=on_update
                ),
                name="pit-view",
            )
        else:
            pit = asyncio.create_task(pit_subscriber(broker, model, subscribed, logger), name="pit")
        procs: list[asyncio.subprocess.Process] = []
        try:
            async with asyncio.timeout(CONNECT_WAIT_S):
                await subscribed.wait()
            cpu_start = time.process_time()
            broker_cpu_start = mosquitto_cpu_s(broker.config_path)
            start = time.perf_counter()
            outs = [Path(tmp) / f"worker-{w}.json" for w in range(len(shares))]
            for w, share in enumerate(shares):
                spec = {
                    "broker": broker.url,
                    "tables": share,
                    "rounds": rounds,
                    "pace_s": pace_s,
                    "seed": seed + w,
                    "workdir": tmp,
                    "timeout_s": timeout_s,
                }
                procs.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "bench.tables",
                        "--worker",
                        json.dumps(spec),
                        "--out",
                        str(outs[w]),
                        stdin=asyncio.subprocess.DEVNULL,
                    )
                )
            async with asyncio.timeout(timeout_s + CONNECT_WAIT_S):
                codes = [await p.wait() for p in procs]
            if any(codes):
                raise BenchError(f"a table worker failed: exit codes {codes}")
            results = [json.loads(out.read_text(encoding="utf-8")) for out in outs]
            tables = [t for r in results for t in r["tables"]]
            expected = {i for t in tables for sent in t["sent"].values() for i in sent}
            model.expect(expected)
            await wait_complete(model)
            wall_s = time.perf_counter() - start
            pit_cpu_s = time.process_time() - cpu_start
            broker_cpu_end = mosquitto_cpu_s(broker.config_path)
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
                    await p.wait()
            stop.set()  # the view returns on its own
            if not view:
                pit.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pit
            logger.removeHandler(discards)
    render_s = time_render(model)
    lost = expected - model.received
    played_s = max(r["played_s"] for r in results)
    inputs = sum(t["inputs"] for t in tables)
    worker_cpu_s = sum(r["cpu_s"] for r in results)
    by_kind: Counter[str] = Counter()
    sent_by_kind: Counter[str] = Counter()
    enqueued: Counter[str] = Counter()
    for t in tables:
        enqueued.update(t["enqueued"])
        for kind, sent in t["sent"].items():
            sent_by_kind[kind] += len(sent)
            by_kind[kind] += sum(1 for i in sent if i not in model.received)
    unsent_non_retained = sum(enqueued[k] - sent_by_kind[k] for k in NON_RETAINED)
    span = (model.last or 0.0) - (model.first or 0.0)
    views = model.tables
    broker_cpu = (
        None
        if broker_cpu_start is None or broker_cpu_end is None
        else round(broker_cpu_end - broker_cpu_start, 2)
    )
    figures: dict[str, Any] = {
        "tables": count,
        "pit": "watch() with its live view" if view else "PitModel fed by one subscriber",
        "workers": len(shares),
        "rounds_per_table": rounds,
        "pace_s": pace_s,
        "rounds": sum(t["rounds"] for t in tables),
        "inputs": inputs,
        "naks": sum(t["naks"] for t in tables),
        "enqueued": dict(enqueued),
        # Retained values replaced in the outbox before they went out are not sent.
        "sent": dict(sent_by_kind),
        "expected": len(expected),
        "received_unique": len(model.received & expected),
        "received_other": len(model.received - expected),
        "deliveries": model.deliveries,
        "lost": len(lost),
        "lost_by_kind": {k: v for k, v in by_kind.items() if v},
        "discarded_by_pit_queue": discards.discarded,
        "unsent_non_retained": unsent_non_retained,
        "outbox_left": sum(t["outbox_depth"] for t in tables),
        "messages_per_s": round(len(model.received) / span) if span > 0 else None,
        "offered_messages_per_s": round(len(expected) / played_s) if played_s > 0 else None,
        # What the pace asks of all the tables together, and what they managed.
        "paced_inputs_per_s": round(count / pace_s) if pace_s > 0 else None,
        "inputs_per_s": round(inputs / played_s) if played_s > 0 else None,
        "receive_span_s": round(span, 3),
        "wall_s": round(wall_s, 3),
        "worker_played_s_max": max(r["played_s"] for r in results),
        "worker_drained_s_max": max(r["drained_s"] for r in results),
        "worker_cpu_s": [r["cpu_s"] for r in results],
        "pit_process_cpu_s": round(pit_cpu_s, 2),
        "broker_cpu_s": broker_cpu,
        # CPU per unit of work: what each part could carry with a core to itself.
        "table_cpu_us_per_input": round(worker_cpu_s / inputs * 1e6) if inputs else None,
        "pit_cpu_us_per_message": round(pit_cpu_s / len(expected) * 1e6) if expected else None,
        "broker_cpu_us_per_message": (
            round(broker_cpu / len(expected) * 1e6, 1)
            if broker_cpu is not None and expected
            else None
        ),
        "pit_tables_seen": len(views),
        "pit_event_gaps": sum(v.events.missing for v in views),
        "pit_accepted": model.accepted,
        "pit_duplicates": model.duplicates,
        "pit_malformed": model.malformed,
        "pit_unexpected": model.unexpected,
        "pit_internal_errors": model.internal_errors,
        "pit_view_render_s": render_s,
    }
    figures["nothing_lost"] = (
        figures["lost"] == 0
        and unsent_non_retained == 0
        and figures["outbox_left"] == 0
        and figures["pit_tables_seen"] == count
        and figures["pit_event_gaps"] == 0
    )
    return figures


# ---------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tables",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--tables", type=int, nargs="+", default=list(TABLE_COUNTS), help="table counts"
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds per table")
    parser.add_argument("--pace", type=float, default=PACE_S, help="seconds between inputs")
    parser.add_argument(
        "--workers",
        type=int,
        default=max(1, (os.cpu_count() or 1) - 1),
        help="table processes (default: one core left for the pit)",
    )
    parser.add_argument(
        "--journal-dir",
        type=Path,
        default=Path("/dev/shm") if Path("/dev/shm").is_dir() else None,
        help="where the journals go (default /dev/shm)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, help="bound per count, s")
    parser.add_argument(
        "--view",
        action="store_true",
        help="the pit as the display runs it: watch() redrawing its live view",
    )
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return worker_main(args.worker, args.out)

    counts = list(QUICK_TABLES) if args.quick else args.tables
    rounds = QUICK_ROUNDS if args.quick else max(1, args.rounds)
    pace_s = QUICK_PACE_S if args.quick else args.pace
    journal_dir = args.journal_dir or Path(tempfile.gettempdir())
    if shutil.disk_usage(journal_dir).free < 256 * 1024 * 1024:
        raise BenchError(f"{journal_dir}: less than 256 MB free for the journals")
    runs = []
    for count in counts:
        with MosquittoBroker() as broker:
            figures = asyncio.run(
                run_tables(
                    broker,
                    count,
                    rounds=rounds,
                    pace_s=pace_s,
                    workers=max(1, min(args.workers, count)),
                    journal_dir=journal_dir,
                    seed=args.seed,
                    timeout_s=args.timeout,
                    view=args.view,
                )
            )
        runs.append(figures)
        print(
            f"tables: {count} tables, {figures['rounds']} rounds, "
            f"{figures['received_unique']}/{figures['expected']} messages received "
            f"({figures['messages_per_s']} msg/s at the pit), lost {figures['lost']}, "
            f"event gaps {figures['pit_event_gaps']}; CPU s: broker {figures['broker_cpu_s']}, "
            f"pit {figures['pit_process_cpu_s']}, tables {figures['worker_cpu_s']}"
        )
    results = {
        "benchmark": "tables",
        "when": now_iso(),
        "machine": machine(),
        "journal_dir": str(journal_dir),
        "runs": runs,
        "target_tables": TARGET_TABLES,
        "meets_target": any(r["tables"] >= TARGET_TABLES and r["nothing_lost"] for r in runs),
    }
    write_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
