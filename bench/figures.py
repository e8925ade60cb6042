"""What the benchmarks share: percentiles, the machine, results files, and two floors.

The floors are what the product's path cannot beat on this machine: one
journal commit on a given disk (:func:`journal_commit_ms`, SQLite in WAL with
``synchronous=FULL``, as the journal opens it), a bare paho-mqtt publish →
receive through a given broker (:func:`paho_floor`, QoS 1, MQTT 5, one message
at a time), and what one wake of a thread costs the CPU with nothing done on it
(:func:`wake_cpu_us`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import socket
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from table_controller.rigs.broker import MosquittoBroker, find_mosquitto

RESULTS_DIR: Final = Path(__file__).resolve().parent / "results"
EVENT_WAIT_S: Final = 10.0
"""How long one message may take before the run is called broken."""
NODELAY: Final = "set_tcp_nodelay true"
"""Every Mosquitto the benchmarks start: Nagle's algorithm off on the broker's sockets
(small packets would otherwise wait for the peer's delayed ACK, 40 ms on Linux)."""


class BenchError(RuntimeError):
    """The table did not do what the benchmark expected; the message says what it saw."""


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (``q`` in 0..100)."""
    if not ordered:
        raise ValueError("no samples")
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered) / 100)))
    return ordered[rank - 1]


def summarize(samples_ms: Sequence[float]) -> dict[str, float | int]:
    """Count, mean, p50, p90, p99 and max of latencies in milliseconds (3 decimals)."""
    ordered = sorted(samples_ms)
    return {
        "count": len(ordered),
        "mean_ms": round(sum(ordered) / len(ordered), 3),
        "p50_ms": round(percentile(ordered, 50), 3),
        "p90_ms": round(percentile(ordered, 90), 3),
        "p99_ms": round(percentile(ordered, 99), 3),
        "max_ms": round(ordered[-1], 3),
    }


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "arch": platform.machine(),
        "kernel": platform.release(),
        "broker": mosquitto_version(),
        # Other work on the machine shows here: the figures are only as quiet as it was.
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def mosquitto_version() -> str:
    """``mosquitto version 2.0.11``, as the broker binary prints it."""
    binary = find_mosquitto()
    if binary is None:
        return "not found"
    try:
        out = subprocess.run(
            [binary, "-h"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0].strip() if out else "unknown"


def write_results(path: Path, figures: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def filesystem_of(path: Path) -> str:
    """The type of the filesystem ``path`` lives on (``ext4``, ``tmpfs``…), from /proc/mounts."""
    target = str(path.resolve())
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ")
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) > len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def journal_commit_ms(folder: Path, samples: int, spacing_s: float = 0.0) -> dict[str, float | int]:
    """What one journal commit costs there: SQLite in WAL with ``synchronous=FULL``,
    as ``table_controller.service.journal`` opens it, one small row a transaction.

    ``spacing_s`` paces the commits as the table's inputs come: a disk (a virtual
    one most of all) that was idle takes longer over an fsync than one kept busy.
    The WAL is as a table's is once its first checkpoint is behind it: written
    over from its start, not grown (an fsync of a file that grew writes its new
    size too). ``wal_bytes_grown`` says how much it grew all the same."""
    path = folder / f"commit-probe-{uuid.uuid4().hex}.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    body = "x" * 200

    def commit() -> None:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO probe (body) VALUES (?)", (body,))
        db.execute("COMMIT")

    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("CREATE TABLE probe (n INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        # A WAL long enough for the samples, checkpointed: they write over it.
        for _ in range(samples + 1):
            commit()
        db.execute("PRAGMA wal_checkpoint(RESTART)")
        wal = Path(f"{path}-wal")
        wal_before = wal.stat().st_size
        times: list[float] = []
        for _ in range(samples):
            time.sleep(spacing_s)
            start = time.perf_counter_ns()
            commit()
            times.append((time.perf_counter_ns() - start) / 1e6)
        grown = wal.stat().st_size - wal_before
    finally:
        db.close()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")
    return {**summarize(times), "wal_bytes_grown": grown}


def wake_cpu_us(samples: int, spacing_s: float) -> float:
    """The CPU one wake costs this machine, with nothing done on it: µs a wake.

    A thread blocks reading a socket and is woken by one byte every ``spacing_s``,
    as a service's threads are woken by a device, a broker or a timer; its own CPU
    clock (``time.thread_time_ns``, the kernel's count for that thread) over the
    wakes, divided by them. A virtual machine's idle CPU makes each wake dearer
    the longer it slept."""
    if samples < 1:
        raise ValueError("at least one sample")
    reader_end, writer_end = socket.socketpair()
    spent: list[int] = []

    def reader() -> None:
        reader_end.recv(1)  # the first byte starts the clock
        start = time.thread_time_ns()
        for _ in range(samples):
            reader_end.recv(1)
        spent.append(time.thread_time_ns() - start)

    thread = threading.Thread(target=reader, name="bench-wake", daemon=True)
    thread.start()
    try:
        for _ in range(samples + 1):
            time.sleep(spacing_s)  # pacing, not waiting for anything
            writer_end.send(b"w")
        thread.join(EVENT_WAIT_S)
    finally:
        reader_end.close()
        writer_end.close()
    if not spent:
        raise BenchError("the woken thread did not finish")
    return round(spent[0] / samples / 1000, 1)


class PahoClient:
    """One paho-mqtt client (MQTT 5) on its own network thread, connected on entry.

    The floor's publisher and subscriber, and the subscriber that times the
    product's events: the same client library at both ends of every figure.
    """

    def __init__(
        self,
        broker: MosquittoBroker,
        name: str,
        on_message: Callable[[int, bytes], None] | None = None,
    ) -> None:
        self.broker = broker
        self._connected = threading.Event()
        self._subscribed = threading.Event()
        self._on_message = on_message
        self.client = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"bench-{name}-{uuid.uuid4().hex[:8]}",
            protocol=paho.MQTTv5,
        )
        self.client.on_connect = self._connect_cb
        self.client.on_subscribe = self._subscribe_cb
        self.client.on_message = self._message_cb

    def _connect_cb(
        self,
        client: paho.Client,
        userdata: Any,
        flags: paho.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        self._connected.set()

    def _subscribe_cb(
        self,
        client: paho.Client,
        userdata: Any,
        mid: int,
        reasons: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        self._subscribed.set()

    def _message_cb(self, client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        # The clock first: the receipt is what is timed.
        arrived = time.perf_counter_ns()
        if self._on_message is not None:
            self._on_message(arrived, bytes(msg.payload))

    def subscribe(self, topic: str) -> None:
        self._subscribed.clear()
        self.client.subscribe(topic, qos=1)
        if not self._subscribed.wait(EVENT_WAIT_S):
            raise BenchError("paho subscription not acknowledged")

    def __enter__(self) -> PahoClient:
        self.client.connect(self.broker.host, self.broker.port)
        self.client.loop_start()
        if not self._connected.wait(EVENT_WAIT_S):
            self.__exit__()
            raise BenchError("paho client did not connect")
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def paho_floor(
    broker: MosquittoBroker, payload: bytes, count: int, spacing_s: float = 0.0
) -> list[float]:
    """Bare paho-mqtt, MQTT 5, QoS 1: publish → receive through the broker, one at a
    time, ``spacing_s`` apart (as the table's cards come)."""
    topic = f"bench/floor/{uuid.uuid4().hex}"
    arrived = threading.Event()
    stamp = [0]

    def on_message(at: int, payload: bytes) -> None:
        stamp[0] = at
        arrived.set()

    samples: list[float] = []
    with PahoClient(broker, "floor-sub", on_message) as sub, PahoClient(broker, "floor-pub") as pub:
        sub.subscribe(topic)
        for _ in range(count):
            time.sleep(spacing_s)
            arrived.clear()
            start = time.perf_counter_ns()
            pub.client.publish(topic, payload, qos=1)
            if not arrived.wait(EVENT_WAIT_S):
                raise BenchError("paho message not received")
            samples.append((stamp[0] - start) / 1e6)
    return samples
