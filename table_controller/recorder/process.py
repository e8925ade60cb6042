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
from table_controller.recorder.store.backend import migrate, open_backend
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


async def serve(cfg: RecorderConfig) -> None:
    db = open_backend(cfg.database.url)
    for attempt in range(DB_START_ATTEMPTS):
        try:
            version = await migrate(db)
            break
        except DatabaseUnavailable as exc:
            if attempt == DB_START_ATTEMPTS - 1:
                raise
            log.warning("database unavailable at start, retrying: %s", exc)
            await asyncio.sleep(1.0)
    log.info("database %s at schema version %d", cfg.database.url.split("@")[-1], version)
    live = LiveHub()
    recorder = Recorder(cfg.mqtt, db, live=live)
    server: ApiServer | None = None
    if cfg.http.listen is not None:
        host, port = parse_listen(cfg.http.listen)
        config = uvicorn.Config(
            build_app(db, live), host=host, port=port, log_level="warning", lifespan="off"
        )
        server = ApiServer(config)

    def stop() -> None:
        log.info("stopping: committing and acknowledging what arrived")
        recorder.stop()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    try:
        async with asyncio.TaskGroup() as tg:
            if server is not None:
                web = tg.create_task(server.serve(), name="recorder-http")
            await recorder.run()
            if server is not None:
                server.should_exit = True
                await web
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await db.close()
