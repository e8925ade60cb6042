"""The recorder process in a caller's loop: SQLite, MQTT 5 or 3.1.1, the caller's stop event;
its HTTP side is the pit display and the API behind the pit users' logins, over TLS when
configured, and a live display does not hold up its stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.light_table import LightTable
from table_controller.recorder.config import RecorderConfig, parse_config
from table_controller.recorder.errors import RecorderConfigError
from table_controller.recorder.process import serve
from table_controller.recorder.web.users import add_user
from table_controller.rigs.broker import MosquittoBroker, free_port
from tests.recorder.conftest import SITE, dealing, unique
from tests.web.test_http import _self_signed

USER, PASSWORD = "pit-boss", "correct horse battery"


def _config(
    broker: MosquittoBroker, folder: Path, port: int, protocol: str = "5", **http: Any
) -> RecorderConfig:
    users = folder / "pit-users"
    add_user(users, USER, PASSWORD)
    return parse_config(
        {
            "mqtt": {"url": broker.url, "client_id": unique("rec"), "sites": [SITE]}
            | {"protocol": protocol},
            "database": {"url": f"sqlite://{folder}/recorder.db"},
            "http": {"listen": f"127.0.0.1:{port}", "users_file": str(users)} | http,
        }
    )


@contextlib.asynccontextmanager
async def serving(cfg: RecorderConfig) -> AsyncIterator[asyncio.Event]:
    stop = asyncio.Event()
    recorder = asyncio.create_task(serve(cfg, stop), name="test-recorder")
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(recorder, 30)


class _Listening(logging.Handler):
    """Set once the recorder says its pit display listens (``serve_web`` logs it)."""

    def __init__(self) -> None:
        super().__init__()
        self.up = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("web pit display at "):
            self.up.set()


@contextlib.contextmanager
def listening() -> Iterator[asyncio.Event]:
    logger = logging.getLogger("table_controller.recorder.web.serve")
    handler, level = _Listening(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.up
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_recorder_in_the_callers_loop(
    mosquitto: MosquittoBroker, tmp_path: Path, protocol: str
) -> None:
    port = free_port()
    cfg = _config(mosquitto, tmp_path, port, protocol)
    async with serving(cfg):
        table = LightTable(mosquitto.host, mosquitto.port, site=SITE, table=unique("demo"))
        async with dealing(table):
            for _ in range(3):
                table.deal_round()
            await table.wait_acked(30)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            rounds = await http.get(f"/api/tables/{SITE}/{table.table}/rounds")
            # Every page and every API route needs a pit user's login.
            assert rounds.status_code == 401
            assert (await http.get("/")).status_code in (302, 303, 307)
            assert (await http.get("/login")).status_code == 200
            rounds = await http.get(
                f"/api/tables/{SITE}/{table.table}/rounds", auth=(USER, PASSWORD)
            )
            assert [r["round_id"] for r in rounds.json()] == [3, 2, 1]
            wrong = await http.get("/api/tables", auth=(USER, "not the password"))
            assert wrong.status_code == 401
    assert (tmp_path / "recorder.db").exists()


def test_http_needs_a_users_file() -> None:
    base = {"mqtt": {"sites": [SITE], "client_id": "rec-1"}}
    with pytest.raises(RecorderConfigError, match=r"http\.users_file: "):
        parse_config(base | {"http": {"listen": "127.0.0.1:8080"}})
    with pytest.raises(RecorderConfigError, match=r"http\.key_file: "):
        parse_config(
            base | {"http": {"listen": "127.0.0.1:8080", "users_file": "u", "cert_file": "c.pem"}}
        )
    # No listen, no HTTP: the recorder records and serves nothing.
    assert parse_config(base).http.listen is None


async def test_a_missing_users_file_is_named_at_start(
    mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    cfg = _config(mosquitto, tmp_path, free_port())
    gone = tmp_path / "nobody"
    cfg = cfg.model_copy(update={"http": cfg.http.model_copy(update={"users_file": gone})})
    with pytest.raises(RecorderConfigError, match=rf"http\.users_file: {gone}: no such file"):
        await asyncio.wait_for(serve(cfg, asyncio.Event()), 30)


async def test_tls_and_a_live_display_open_at_the_stop(
    mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    cert, key = _self_signed(tmp_path)
    port = free_port()
    cfg = _config(mosquitto, tmp_path, port, cert_file=str(cert), key_file=str(key))
    with listening() as up:
        async with serving(cfg) as stop:
            await asyncio.wait_for(up.wait(), 30)
            await _live_display_at_the_stop(port, cert, stop)


async def _live_display_at_the_stop(port: int, cert: Path, stop: asyncio.Event) -> None:
    trust = ssl.create_default_context(cafile=str(cert))
    url = f"https://127.0.0.1:{port}"
    async with (
        httpx.AsyncClient(base_url=url, verify=trust, timeout=10) as http,
        http.stream("GET", "/api/live", auth=(USER, PASSWORD)) as live,
    ):
        assert live.status_code == 200
        # The stop goes through while a display still listens (serving() waits 30 s).
        stop.set()
        with contextlib.suppress(httpx.HTTPError):
            async for _ in live.aiter_bytes():
                pass
