"""The recorder process: database, subscriber and HTTP server under one TaskGroup.

Startup: open the database, apply the migrations and check the schema
version, then subscribe and serve. SIGTERM or SIGINT: stop taking messages,
commit what arrived, publish the acks, stop the HTTP server, disconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Final

import uvicorn

from table_controller.recorder.config import RecorderConfig, parse_listen
from table_controller.recorder.errors import DatabaseUnavailable
from table_controller.recorder.live import LiveHub
from table_controller.recorder.store.backend import Backend, migrate, open_backend
from table_controller.recorder.subscriber import Recorder
from table_controller.recorder.web.app import build_app

log = logging.getLogger(__name__)
DB_START_ATTEMPTS: Final = 30


class ApiServer(uvicorn.Server):
    """uvicorn without its own signal handlers: this process owns SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # Say where the API listens (port 0 picks one): tests and operators read it.
        for s in self.servers:
            for sock in s.sockets:
                host, port = sock.getsockname()[:2]
                print(f"recorder: API on http://{host}:{port}/api", file=sys.stderr, flush=True)


async def serve(cfg: RecorderConfig, stop: asyncio.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT, or until ``stop`` is set when the caller owns the signals
    (a demo running the recorder beside a table in one process)."""
    db = open_backend(cfg.database.url)
    try:
        await _migrate(db, cfg.database.url)
        await _run(cfg, db, stop)
    finally:
        await db.close()


async def _migrate(db: Backend, url: str) -> None:
    for attempt in range(DB_START_ATTEMPTS):
        try:
            version = await migrate(db)
            log.info("database %s at schema version %d", url.split("@")[-1], version)
            return
        except DatabaseUnavailable as exc:
            if attempt == DB_START_ATTEMPTS - 1:
                raise
            log.warning("database unavailable at start, retrying: %s", exc)
            await asyncio.sleep(1.0)


async def _run(cfg: RecorderConfig, db: Backend, stop: asyncio.Event | None) -> None:
    live = LiveHub()
    recorder = Recorder(cfg.mqtt, db, live=live)
    server: ApiServer | None = None
    if cfg.http.listen is not None:
        host, port = parse_listen(cfg.http.listen)
        config = uvicorn.Config(
            build_app(db, live), host=host, port=port, log_level="warning", lifespan="off"
        )
        server = ApiServer(config)
    stopping = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT) if stop is None else ()
    for sig in signals:
        loop.add_signal_handler(sig, stopping.set)

    async def stop_when_asked() -> None:
        await stopping.wait()
        log.info("stopping: committing and acknowledging what arrived")
        recorder.stop()

    try:
        async with asyncio.TaskGroup() as tg:
            watcher = tg.create_task(stop_when_asked(), name="recorder-stop")
            if server is not None:
                web = tg.create_task(server.serve(), name="recorder-http")
            await recorder.run()
            watcher.cancel()
            if server is not None:
                server.should_exit = True
                await web
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
