"""docs/feed.md against a real Mosquitto: ``feed_seq`` across events, rounds and alerts; the table
reads its own ``ack`` and ``replay``, ignores another table's, answers a replay with the
original ids and raises ``REPLAY_UNAVAILABLE`` for what it does not hold."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from table_controller.engine import CardRead
from table_controller.feed.payloads import parse_payload
from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.config import parse_config
from table_controller.service.service import TableService
from tests.service.journal_tables import session

WAIT_S = 20.0
PREFIX = "casino/main-floor/table/war-07"


@pytest.fixture
def broker() -> Iterator[MosquittoBroker]:
    with MosquittoBroker() as b:
        yield b


@dataclass
class Seen:
    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def wait(self, ok: Callable[[list[tuple[str, dict[str, Any]]]], bool]) -> None:
        async with asyncio.timeout(WAIT_S), self.changed:
            await self.changed.wait_for(lambda: ok(self.messages))


@contextlib.asynccontextmanager
async def listening(broker: MosquittoBroker) -> AsyncIterator[tuple[Seen, aiomqtt.Client]]:
    seen = Seen()
    async with aiomqtt.Client(
        broker.host, broker.port, protocol=aiomqtt.ProtocolVersion.V5
    ) as client:
        await client.subscribe(f"{PREFIX}/#", qos=1)

        async def read() -> None:
            async for msg in client.messages:
                assert isinstance(msg.payload, bytes)
                seen.messages.append((str(msg.topic).rsplit("/", 1)[-1], json.loads(msg.payload)))
                async with seen.changed:
                    seen.changed.notify_all()

        task = asyncio.create_task(read())
        try:
            yield seen, client
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _cfg(tmp_path: Path, broker: MosquittoBroker) -> Any:
    return parse_config(
        {
            "table": {"id": "war-07", "site": "main-floor", "rules": "ny"},
            "devices": {
                "shoe": "socket://127.0.0.1:9",
                "console": "socket://127.0.0.1:9",
                "sensors": "simusb://127.0.0.1:9",
            },
            "mqtt": {"url": broker.url},
            "storage": {"path": str(tmp_path / "war-07.sqlite3")},
        }
    )


def _from_recorder(schema: str, epoch: str, **fields: Any) -> bytes:
    body = {
        "schema": schema,
        "table": "war-07",
        "site": "main-floor",
        "ts": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "recorder": "recorder-1",
        "epoch": epoch,
        **fields,
    }
    return json.dumps(body).encode()


def test_feed_seq_ack_and_replay(tmp_path: Path, broker: MosquittoBroker) -> None:
    async def scenario() -> None:
        service = TableService(_cfg(tmp_path, broker))
        handled = asyncio.Event()
        inbox_handle = service.inbox.handle

        def noted(topic: str, payload: bytes) -> None:
            inbox_handle(topic, payload)
            if not topic.endswith("/status"):
                handled.set()

        service.inbox.handle = noted  # type: ignore[method-assign]
        stop = asyncio.Event()
        async with listening(broker) as (seen, client):
            task = asyncio.create_task(service.run(stop))
            await asyncio.wait_for(service.ready.wait(), WAIT_S)
            runner = service.runner
            for inp in session(3):
                runner.handle(inp)
            top = runner.messages.feed_seq
            epoch = service.journal.epoch

            def feed(msgs: list[tuple[str, dict[str, Any]]]) -> list[int]:
                return [b["feed_seq"] for k, b in msgs if k in ("events", "rounds", "alerts")]

            await seen.wait(lambda m: top in feed(m))
            # Every non-retained message, in outbox order, +1 each, one counter for three topics
            # (the devices' offline alerts go on meanwhile: they are in the feed too).
            assert feed(seen.messages)[:top] == list(range(1, top + 1))
            for kind, body in seen.messages:
                parse_payload(json.dumps(body))
                assert kind in ("status", "state", "stats") or body["feed_seq"] >= 1

            # Another table's ack and an ill-formed one: ignored, counted, never acted on.
            for payload in (
                _from_recorder("table-ack/1", epoch, feed_seq=top, table="war-08"),
                b'{"schema": "table-ack/1"}',
            ):
                handled.clear()
                await client.publish(f"{PREFIX}/ack", payload, qos=1)
                await asyncio.wait_for(handled.wait(), WAIT_S)
            assert sum(service.inbox.ignored.values()) == 2
            assert service.journal._db.execute("SELECT COUNT(*) FROM acks").fetchone()[0] == 0

            handled.clear()
            ack = _from_recorder("table-ack/1", epoch, feed_seq=5)
            await client.publish(f"{PREFIX}/ack", ack, qos=1, retain=True)
            await asyncio.wait_for(handled.wait(), WAIT_S)
            acks = service.journal._db.execute("SELECT recorder, feed_seq FROM acks").fetchall()
            assert [tuple(r) for r in acks] == [("recorder-1", 5)]

            # A replay: the same messages again, same ids and payloads; what the table no
            # longer holds (the first message, as if pruned) is unavailable, and what it has
            # not numbered yet (past the newest) is not.
            top = runner.messages.feed_seq
            await seen.wait(lambda m: top in feed(m))
            before = {
                b["feed_seq"]: b for k, b in seen.messages if k in ("events", "rounds", "alerts")
            }
            count = len(seen.messages)
            service.journal._db.execute("DELETE FROM outbox WHERE feed_seq = 1")
            replay = _from_recorder(
                "table-replay/1", epoch, from_feed_seq=1, to_feed_seq=top + 1000
            )
            await client.publish(f"{PREFIX}/replay", replay, qos=1)

            def unavailable(msgs: list[tuple[str, dict[str, Any]]]) -> bool:
                return any(k == "alerts" and b["code"] == "REPLAY_UNAVAILABLE" for k, b in msgs)

            await seen.wait(unavailable)
            await seen.wait(
                lambda m: sum(1 for k, b in m[count:] if b.get("feed_seq") in before) >= top - 1
            )
            again = [
                b
                for k, b in seen.messages[count:]
                if k in ("events", "rounds", "alerts") and b["feed_seq"] in before
            ]
            assert [b["feed_seq"] for b in again][: top - 1] == list(range(2, top + 1))
            assert all(b == before[b["feed_seq"]] for b in again)
            (alert,) = [b for k, b in seen.messages if k == "alerts" and "REPLAY" in b["code"]]
            assert "asked for feed_seq 1: no longer held" in alert["message"]
            assert alert["severity"] == "warning"
            stop.set()
            await asyncio.wait_for(task, WAIT_S)

    asyncio.run(scenario())


def test_status_names_the_newest_feed_seq_once_the_table_is_quiet(
    tmp_path: Path, broker: MosquittoBroker
) -> None:
    """docs/feed.md: ``status.feed.last_feed_seq`` lets a recorder see a lost tail. So the
    retained status catches up with the feed (at most once a second) even when neither a
    device nor the outbox's figures changed: a recorder that missed the table's last
    messages finds them named there."""

    async def scenario() -> None:
        service = TableService(_cfg(tmp_path, broker))
        stop = asyncio.Event()
        async with listening(broker) as (seen, _client):
            task = asyncio.create_task(service.run(stop))
            await asyncio.wait_for(service.ready.wait(), WAIT_S)
            for inp in session(2):
                service.runner.handle(inp)
            top = service.runner.messages.feed_seq

            def announced(msgs: list[tuple[str, dict[str, Any]]]) -> list[int]:
                """What each status named, once the outbox had sent everything."""
                return [
                    b["feed"]["last_feed_seq"]
                    for k, b in msgs
                    if k == "status" and b["outbox"]["depth"] == 0
                ]

            # The devices' offline alerts may go on meanwhile: at least ``top``.
            await seen.wait(lambda m: max(announced(m), default=0) >= top)
            # Now a quiet table reads one card that no deal wants (an UNEXPECTED_CARD
            # alert), sent at once: the only figure that changes is the feed's.
            service.runner.handle(CardRead(at=datetime.now(UTC), n=10_000, card="AS"))
            top = service.runner.messages.feed_seq
            await seen.wait(lambda m: max(announced(m), default=0) >= top)
            stop.set()
            await asyncio.wait_for(task, WAIT_S)

    asyncio.run(scenario())
