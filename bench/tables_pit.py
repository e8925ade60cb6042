"""The pit side of ``bench.tables``: the pit display's model, counting what arrives.

One aiomqtt subscriber (MQTT 5, QoS 1, on ``casino/#``, with the pit display's
bound of 10,000 queued incoming messages, beyond which a lagging pit discards
messages; each discard is counted) feeds a
:class:`~table_controller.pit.display.PitModel`; a thin subclass notes each
message's ``id`` and arrival time.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Final

import aiomqtt
from rich.console import Console

from table_controller.pit.display import (
    KEEPALIVE_S,
    MAX_QUEUED_MESSAGES,
    PitModel,
    render,
)
from table_controller.rigs.broker import MosquittoBroker

DRAIN_WAIT_S: Final = 120.0
"""After the last worker finished: how long the pit may take to receive the rest."""
QUIET_S: Final = 15.0
"""...unless nothing at all arrives for this long."""
PIT_FILTER: Final = "casino/#"


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
