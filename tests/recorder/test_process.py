"""The recorder process in a caller's loop: SQLite, MQTT 5 or 3.1.1, the caller's stop event."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from bench.light_table import LightTable
from table_controller.recorder.config import parse_config
from table_controller.recorder.process import serve
from table_controller.rigs.broker import MosquittoBroker, free_port
from tests.recorder.conftest import SITE, dealing, unique


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_recorder_in_the_callers_loop(
    mosquitto: MosquittoBroker, tmp_path: Path, protocol: str
) -> None:
    port = free_port()
    cfg = parse_config(
        {
            "mqtt": {"url": mosquitto.url, "client_id": unique("demo"), "sites": [SITE]}
            | {"protocol": protocol},
            "database": {"url": f"sqlite://{tmp_path}/demo.db"},
            "http": {"listen": f"127.0.0.1:{port}"},
        }
    )
    stop = asyncio.Event()
    recorder = asyncio.create_task(serve(cfg, stop), name="demo-recorder")
    table = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=unique("demo"))
    async with dealing(table):
        for _ in range(3):
            table.deal_round()
        await table.wait_acked(30)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
        rounds = await http.get(f"/api/tables/{SITE}/{table.table}/rounds")
    assert [r["round_id"] for r in rounds.json()] == [3, 2, 1]
    stop.set()
    await asyncio.wait_for(recorder, 30)
    assert (tmp_path / "demo.db").exists()
