"""The recorder's fixtures: a real PostgreSQL, databases of both kinds, recorders to run.

PostgreSQL is Debian's (``bench/pg_server.py``): initdb and pg_ctl in a temp
folder on a free port, as ``tests/conftest.py`` starts Mosquitto. Every test
gets a fresh database; ``db_url`` runs a test once against SQLite and once
against PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from bench.light_table import LightTable
from bench.pg_server import PostgresServer
from table_controller.recorder.config import RecorderConfig, parse_config
from table_controller.recorder.store.backend import Backend, migrate, open_backend
from table_controller.recorder.subscriber import Recorder
from table_controller.recorder.web.users import add_user
from table_controller.rigs.broker import MosquittoBroker

SITE = "main-floor"
ROOT = Path(__file__).resolve().parents[2]


def unique(prefix: str) -> str:
    """A table id no earlier test used on the session's broker (retained status stays)."""
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A server for one test alone, which the test may stop and start again."""
    server = PostgresServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/recorder.db"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    return postgres.create_database()


@contextlib.asynccontextmanager
async def migrated(url: str) -> AsyncIterator[Backend]:
    backend = open_backend(url)
    try:
        await migrate(backend)
        yield backend
    finally:
        await backend.close()


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Backend]:
    async with migrated(db_url) as backend:
        yield backend


@pytest.fixture
async def pg_db(pg_url: str) -> AsyncIterator[Backend]:
    async with migrated(pg_url) as backend:
        yield backend


def recorder_config(
    broker: MosquittoBroker,
    db_url: str,
    name: str | None = None,
    listen: str | None = None,
    group: str | None = None,
) -> RecorderConfig:
    """A recorder of its own name and group: the broker keeps a session and its share of a
    group's messages after a test, and another test must not inherit them."""
    return parse_config(
        {
            "mqtt": {
                "url": broker.url,
                "client_id": name or unique("rec"),
                "group": group or unique("group"),
                "sites": [SITE],
            },
            "database": {"url": db_url},
            "http": {"listen": listen},
        }
    )


@contextlib.asynccontextmanager
async def running(recorder: Recorder) -> AsyncIterator[Recorder]:
    """A recorder running in this loop; stopped cleanly (as on SIGTERM) at the end."""
    task = asyncio.create_task(recorder.run(), name="test-recorder")
    try:
        yield recorder
    finally:
        recorder.stop()
        await asyncio.wait_for(task, 30)


@contextlib.asynccontextmanager
async def dealing(*tables: LightTable) -> AsyncIterator[tuple[LightTable, ...]]:
    """Light tables connected and answering acks and replays."""
    tasks = [asyncio.create_task(t.run(), name=f"table-{t.table}") for t in tables]
    try:
        yield tables
    finally:
        for task in tasks:
            task.cancel()
        ended = await asyncio.gather(*tasks, return_exceptions=True)
    # A table that died on its own would have stopped publishing: say so, not a timeout
    # (after the test's own failure, if any: that one is raised as it is).
    for outcome in ended:
        if isinstance(outcome, Exception):
            raise outcome


class RecorderProcess:
    """``table-controller recorder`` as a child process, for SIGKILL and SIGTERM."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config, self.log = config, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "table_controller.cli", "recorder", "--config", self.config],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=os.environ | {"PYTHONUNBUFFERED": "1"},
            )

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.proc = None
        return code


def write_config(path: Path, broker: MosquittoBroker, db_url: str, name: str, group: str) -> Path:
    """A recorder as production runs it: its pit display and API behind a pit user's login."""
    users = path.with_name(f"{name}.pit-users")
    add_user(users, "pit-boss", "correct horse battery")
    path.write_text(
        f'[mqtt]\nurl = "{broker.url}"\nclient_id = "{name}"\ngroup = "{group}"\n'
        f'sites = ["{SITE}"]\n[database]\nurl = "{db_url}"\n'
        f'[http]\nlisten = "127.0.0.1:0"\nusers_file = "{users}"\n',
        encoding="utf-8",
    )
    return path


Spawn = Callable[[MosquittoBroker, str, str], RecorderProcess]


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """Start ``table-controller recorder`` processes (broker, database, group); killed after."""
    made: list[RecorderProcess] = []

    def start(broker: MosquittoBroker, db_url: str, group: str) -> RecorderProcess:
        name = unique("rec")
        cfg = write_config(tmp_path / f"{name}.toml", broker, db_url, name, group)
        process = RecorderProcess(cfg, tmp_path / f"{name}.log")
        process.start()
        made.append(process)
        return process

    yield start
    for process in made:
        if process.proc is not None:
            process.kill()
        # Shown by pytest when the test fails: what each recorder said.
        print(f"--- {process.log.name}\n{process.log.read_text(errors='replace')}")
