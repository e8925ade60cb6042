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
(client id = table@site, QoS 1, PUBACKs awaited, the retained last will), wired
by the service's own composition (``service/compose.py``). A dealer loop
(``bench/feeder.py``) feeds each runner what its devices would: devices online,
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
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.figures import NODELAY, RESULTS_DIR, BenchError, machine, now_iso, write_results
from bench.tables_pit import (
    CountingPitModel,
    DiscardCounter,
    Nowhere,
    mosquitto_cpu_s,
    pit_subscriber,
    time_render,
    wait_complete,
)
from bench.tables_table import CONNECT_WAIT_S, worker_main
from table_controller.pit.display import BrokerLink, PitModel, watch
from table_controller.rigs.broker import MosquittoBroker

RESULTS = RESULTS_DIR / "tables.json"
TABLE_COUNTS = (50, 200)
TARGET_TABLES = 200
ROUNDS = 20
PACE_S = 0.05
"""Seconds between one table's inputs (jittered ±50 %). A round here is about eleven
inputs, so about 0.55 s when the pace is kept; a live round takes some 40 s."""
QUICK_TABLES = (2,)
QUICK_ROUNDS = 2
QUICK_PACE_S = 0.01
RUN_TIMEOUT_S = 900.0
NON_RETAINED = ("events", "rounds", "alerts")


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
        with MosquittoBroker(extra_config=NODELAY) as broker:
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
