"""docs/feed.md ``status``: after a clean stop the retained status says ``online: false``, even
when the stop cannot go as planned: the journal cannot commit the final status (a full disk),
or the broker does not acknowledge it in time. Against a real Mosquitto; the stop is the
service's own (``stop`` set), as at SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.config import parse_config
from table_controller.service.outbox import OutboxMessage
from table_controller.service.publisher_drain import MAX_IN_FLIGHT
from table_controller.service.service import TableService
from tests.service.journal_tables import fill
from tests.tcp_relay import relay_to

WAIT_S = 20.0
PREFIX = "casino/main-floor/table/war-07"


class Statuses:
    """The retained status as the broker holds it, watched by a subscriber of its own."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.changed = asyncio.Condition()

    async def wait_for(self, online: bool, instance: str | None = None) -> dict[str, Any]:
        def last() -> dict[str, Any] | None:
            for s in reversed(self.seen):
                if instance is None or s["instance"] == instance:
                    return s if s["online"] is online else None
            return None

        async with asyncio.timeout(WAIT_S), self.changed:
            await self.changed.wait_for(lambda: last() is not None)
        found = last()
        assert found is not None
        return found


@contextlib.asynccontextmanager
async def watching(broker: MosquittoBroker) -> AsyncIterator[Statuses]:
    statuses = Statuses()
    async with aiomqtt.Client(
        broker.host, broker.port, protocol=aiomqtt.ProtocolVersion.V5
    ) as client:
        await client.subscribe(f"{PREFIX}/status", qos=1)

        async def read() -> None:
            async for msg in client.messages:
                assert isinstance(msg.payload, bytes)
                statuses.seen.append(json.loads(msg.payload))
                async with statuses.changed:
                    statuses.changed.notify_all()

        task = asyncio.create_task(read())
        try:
            yield statuses
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def service_on(journal: Path, broker_url: str) -> TableService:
    return TableService(
        parse_config(
            {
                "table": {"id": "war-07", "site": "main-floor", "rules": "ny"},
                "devices": {
                    "shoe": "socket://127.0.0.1:9",
                    "console": "socket://127.0.0.1:9",
                    "sensors": "simusb://127.0.0.1:9",
                },
                "mqtt": {"url": broker_url},
                "storage": {"path": str(journal)},
            }
        )
    )


async def test_a_stop_while_the_disk_is_full_still_says_offline(
    own_mosquitto: MosquittoBroker, small_disk: Path
) -> None:
    service = service_on(small_disk / "j.sqlite3", own_mosquitto.url)
    stop = asyncio.Event()
    async with watching(own_mosquitto) as statuses:
        task = asyncio.create_task(service.run(stop))
        online = await statuses.wait_for(True)
        filler = fill(small_disk)
        try:
            stop.set()
            # The stop itself goes well: the service returns.
            await asyncio.wait_for(task, WAIT_S)
        finally:
            filler.unlink()
        final = await statuses.wait_for(False, online["instance"])
    assert final["instance"] == online["instance"]


async def test_a_final_status_the_broker_does_not_acknowledge_leaves_the_will(
    own_mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    async with relay_to(own_mosquitto.port) as relay, watching(own_mosquitto) as statuses:
        service = service_on(tmp_path / "j.sqlite3", relay.url)
        stop = asyncio.Event()
        task = asyncio.create_task(service.run(stop))
        online = await statuses.wait_for(True)
        # The broker goes quiet (no PUBACK comes) with a window's worth of messages in
        # flight: the final status queues behind them and is never sent.
        relay.replies.clear()
        backlog = [
            OutboxMessage(
                id=f"backlog-{i}",
                topic=f"{PREFIX}/events",
                payload=b'{"backlog": true}',
                qos=1,
                retain=False,
            )
            for i in range(2 * MAX_IN_FLIGHT)
        ]
        service.journal.enqueue(backlog)
        service.publisher.wake()
        stop.set()
        await asyncio.wait_for(task, WAIT_S)
        relay.replies.set()
        # The table is gone: the broker publishes its last will.
        final = await statuses.wait_for(False, online["instance"])
    assert final["instance"] == online["instance"]
