"""docs/feed.md ``status``: after a clean stop the retained status says ``online: false``, even
when the stop cannot go as planned: the journal cannot commit the final status (a full disk),
or the broker does not acknowledge it in time. Against a real Mosquitto; the stop is the
service's own (``stop`` set), as at SIGTERM."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.config import parse_config
from table_controller.service.outbox import OutboxMessage
from table_controller.service.publisher_drain import MAX_IN_FLIGHT
from table_controller.service.service import TableService
from tests.service.journal_tables import fill
from tests.service.test_feed_inbox import Seen, listening
from tests.tcp_relay import relay_to

WAIT_S = 20.0
PREFIX = "casino/main-floor/table/war-07"


def last_status(messages: list[tuple[str, dict[str, Any]]], instance: str) -> dict[str, Any]:
    return next(b for k, b in reversed(messages) if k == "status" and b["instance"] == instance)


async def went_online(seen: Seen) -> str:
    """The instance of the table's first retained ``online: true``."""
    await seen.wait(lambda m: any(k == "status" and b["online"] for k, b in m))
    return str(next(b["instance"] for k, b in seen.messages if k == "status" and b["online"]))


async def went_offline(seen: Seen, instance: str) -> None:
    def offline(m: list[tuple[str, dict[str, Any]]]) -> bool:
        statuses = [b for k, b in m if k == "status" and b["instance"] == instance]
        return bool(statuses) and statuses[-1]["online"] is False

    await seen.wait(offline)
    assert last_status(seen.messages, instance)["online"] is False


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
    async with listening(own_mosquitto) as (seen, _):
        task = asyncio.create_task(service.run(stop))
        instance = await went_online(seen)
        filler = fill(small_disk)
        try:
            stop.set()
            # The stop itself goes well: the service returns.
            await asyncio.wait_for(task, WAIT_S)
        finally:
            filler.unlink()
        await went_offline(seen, instance)


async def test_a_final_status_the_broker_does_not_acknowledge_leaves_the_will(
    own_mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    async with relay_to(own_mosquitto.port) as relay, listening(own_mosquitto) as (seen, _):
        service = service_on(tmp_path / "j.sqlite3", relay.url)
        stop = asyncio.Event()
        task = asyncio.create_task(service.run(stop))
        instance = await went_online(seen)
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
        await went_offline(seen, instance)
