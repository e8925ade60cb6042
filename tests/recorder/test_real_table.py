"""The recorder against a real table: the service's runner, journal, publisher and inbox.

The table deals a seeded session of engine inputs (its devices offline, so it also
raises their alerts: they are in the feed too); the recorder stores the feed and
the table receives the recorder's ``ack`` for every ``feed_seq`` it published.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiomqtt

from table_controller.recorder import queries
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.subscriber import Recorder
from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.config import parse_config
from table_controller.service.service import TableService
from tests.recorder.conftest import SITE, recorder_config, running, unique
from tests.service.journal_tables import session

WAIT_S = 60.0


async def test_a_real_table_is_recorded_and_acknowledged(
    mosquitto: MosquittoBroker, db_url: str, db: Backend, tmp_path: Path
) -> None:
    name = unique("war")
    cfg = parse_config(
        {
            "table": {"id": name, "site": SITE, "rules": "ny"},
            "devices": {
                "shoe": "socket://127.0.0.1:9",
                "console": "socket://127.0.0.1:9",
                "sensors": "simusb://127.0.0.1:9",
            },
            "mqtt": {"url": mosquitto.url},
            "storage": {"path": str(tmp_path / "table.sqlite3")},
        }
    )
    service = TableService(cfg)
    stop = asyncio.Event()
    prefix = f"casino/{SITE}/table/{name}"
    async with (
        running(Recorder(recorder_config(mosquitto, db_url).mqtt, db)),
        aiomqtt.Client(mosquitto.host, mosquitto.port, protocol=aiomqtt.ProtocolVersion.V5) as ear,
    ):
        await ear.subscribe(f"{prefix}/ack", qos=1)
        table = asyncio.create_task(service.run(stop), name="table")
        await asyncio.wait_for(service.ready.wait(), WAIT_S)
        for inp in session(4, positions=3):
            service.runner.handle(inp)
        top = service.runner.messages.feed_seq
        epoch = service.journal.epoch
        async with asyncio.timeout(WAIT_S):
            async for message in ear.messages:
                assert isinstance(message.payload, bytes)
                ack = json.loads(message.payload)
                if ack["epoch"] == epoch and ack["feed_seq"] >= top:
                    break
        stop.set()
        await asyncio.wait_for(table, WAIT_S)
    rows = await db.fetch(
        "SELECT feed_seq, problem FROM messages WHERE table_id = ? AND epoch = ?", (name, epoch)
    )
    seqs = sorted(int(r[0]) for r in rows)
    assert seqs[:top] == list(range(1, top + 1))  # every feed_seq once, none missing
    assert len(seqs) == len(set(seqs))
    assert [r for r in rows if r[1] is not None] == []  # every body matched its model
    rounds = await queries.rounds(db, SITE, name, last=100)
    assert len(rounds) == 4
