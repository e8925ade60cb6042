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
from collections.abc import AsyncIterator, Iterator
from typing import Final

import uvicorn

from table_controller.recorder.config import RecorderConfig
from table_controller.recorder.errors import DatabaseUnavailable, RecorderConfigError
from table_controller.recorder.live import LiveHub
from table_controller.recorder.store.backend import Backend, migrate, open_backend
from table_controller.recorder.store.roles import owned_hand_records
from table_controller.recorder.subscriber import Recorder
from table_controller.recorder.web.errors import TlsConfigError, UsersFileError
from table_controller.recorder.web.serve import serve_pit

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
            owned = await owned_hand_records(db)
            if owned:
                log.warning(
                    "the recorder's role owns the hand records (%s): it could grant itself "
                    "UPDATE or DELETE on them; have the database's administrator own the "
                    "schema (table-controller records migrate --grant ROLE, docs/recorder.md)",
                    ", ".join(owned),
                )
            return
        except DatabaseUnavailable as exc:
            if attempt == DB_START_ATTEMPTS - 1:
                raise
            log.warning("database unavailable at start, retrying: %s", exc)
            await asyncio.sleep(1.0)


async def _run(cfg: RecorderConfig, db: Backend, stop: asyncio.Event | None) -> None:
    live = LiveHub()
    recorder = Recorder(cfg.mqtt, db, live=live)
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
        async with _http(cfg, db, live), asyncio.TaskGroup() as tg:
            watcher = tg.create_task(stop_when_asked(), name="recorder-stop")
            await recorder.run()
            watcher.cancel()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


@contextlib.asynccontextmanager
async def _http(cfg: RecorderConfig, db: Backend, live: LiveHub) -> AsyncIterator[None]:
    """The pit pages and the API behind the logins, while the block runs (docs/web.md);
    nothing without ``[http] listen``. A live display open at the stop is closed after a
    short grace (``serve_web``), so it never holds the stop up."""
    http = cfg.http
    if http.listen is None or http.users_file is None:
        yield
        return
    if not http.users_file.is_file():
        raise RecorderConfigError(
            f"http.users_file: {http.users_file}: no such file; make it with "
            f"table-controller users add NAME --file {http.users_file}"
        )
    async with contextlib.AsyncExitStack() as stack:
        try:
            url = await stack.enter_async_context(
                serve_pit(
                    db,
                    live,
                    http.listen,
                    http.users_file,
                    cert_file=http.cert_file,
                    key_file=http.key_file,
                )
            )
        except (TlsConfigError, UsersFileError) as exc:
            raise RecorderConfigError(str(exc)) from exc
        # Say where it listens (port 0 picks one): operators and tests read it.
        print(f"recorder: pit display and API on {url}", file=sys.stderr, flush=True)
        yield
