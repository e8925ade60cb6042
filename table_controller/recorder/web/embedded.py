"""A whole pit in one process: a recorder of some sites, its database and the web display.

For the demo (``table-controller demo --web HOST:PORT``) and the browser
tests: the production recorder (MQTT 5 shared subscription, so the broker
must speak MQTT 5: Mosquitto, not the embedded 3.1.1 broker), an SQLite
database, and :func:`~table_controller.recorder.web.serve.serve_pit` on
``listen``, the pages hearing of each commit through the same
:class:`LiveHub`. A pit user is made if the users file has none.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from table_controller.recorder.config import parse_config
from table_controller.recorder.live import LiveHub
from table_controller.recorder.store.backend import Backend, migrate, open_backend
from table_controller.recorder.subscriber import Recorder
from table_controller.recorder.web.serve import serve_pit
from table_controller.recorder.web.users import add_user, load_users

DEMO_USER: Final = "pit"


@dataclass(frozen=True, slots=True)
class EmbeddedPit:
    url: str
    db: Backend
    recorder: Recorder
    user: str
    password: str | None
    """The password of a user made just now; None when the users file had users already."""


def ensure_user(users_file: Path, name: str = DEMO_USER) -> str | None:
    """Make ``name`` with a fresh random password if the file has no user; return it."""
    if users_file.exists() and load_users(users_file).hashes:
        return None
    password = secrets.token_urlsafe(12)
    add_user(users_file, name, password)
    return password


def _sqlite_url(path: Path) -> str:
    return f"sqlite://{path.resolve()}"


@contextlib.asynccontextmanager
async def embedded_pit(
    broker_url: str,
    sites: Sequence[str],
    workdir: Path,
    listen: str = "127.0.0.1:0",
    *,
    users_file: Path | None = None,
    database_url: str | None = None,
    name: str = "pit-recorder",
) -> AsyncIterator[EmbeddedPit]:
    """Record ``sites`` from ``broker_url`` into ``workdir/recorder.db`` (or the database
    at ``database_url``) and serve the pit.

    Yields once the web display listens (``url``); on exit the recorder
    commits and acknowledges what arrived, then the database closes.
    """
    users = users_file or workdir / "pit-users"
    password = ensure_user(users)
    db = open_backend(database_url or _sqlite_url(workdir / "recorder.db"))
    await migrate(db)
    live = LiveHub()
    cfg = parse_config(
        {
            "mqtt": {"url": broker_url, "client_id": name, "group": name, "sites": list(sites)},
            "http": {"listen": None},
        }
    )
    recorder = Recorder(cfg.mqtt, db, live=live)
    task = asyncio.create_task(recorder.run(), name="pit-recorder")
    try:
        async with serve_pit(db, live, listen, users) as url:
            yield EmbeddedPit(url, db, recorder, DEMO_USER, password)
    finally:
        recorder.stop()
        await task
        await db.close()
