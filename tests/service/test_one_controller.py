"""docs/feed.md, one controller per table, against a real Mosquitto: of two controllers started as
the same table the later one yields and exits naming the other, and the earlier one stays
online; two tables with the same id at different sites never clash."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.errors import EXIT_IDENTITY

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 30.0


@pytest.fixture
def broker() -> Iterator[MosquittoBroker]:
    with MosquittoBroker() as b:
        yield b


LOGS: list[Any] = []


def _controller(
    tmp_path: Path, name: str, site: str, broker: MosquittoBroker
) -> subprocess.Popen[str]:
    toml = tmp_path / f"{name}.toml"
    toml.write_text(
        f'[table]\nid = "war-07"\nsite = "{site}"\n'
        '[devices]\nshoe = "socket://127.0.0.1:9"\nconsole = "socket://127.0.0.1:9"\n'
        'sensors = "simusb://127.0.0.1:9"\n'
        f'[mqtt]\nurl = "{broker.url}"\n[storage]\npath = "{tmp_path / name}.sqlite3"\n'
    )
    log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 (closed by the test)
    LOGS.append(log)
    return subprocess.Popen(
        [sys.executable, "-m", "table_controller.cli", "run", "--config", str(toml)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


class Statuses:
    """Every ``status`` of the site's tables, in arrival order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Condition()

    async def run(self, broker: MosquittoBroker) -> None:
        async with aiomqtt.Client(broker.host, broker.port) as client:
            await client.subscribe("casino/+/table/+/status", qos=1)
            async for msg in client.messages:
                assert isinstance(msg.payload, bytes)
                self.seen.append((str(msg.topic), json.loads(msg.payload)))
                async with self.changed:
                    self.changed.notify_all()

    async def online(self, site: str, *, instance: str | None = None) -> dict[str, Any]:
        """The site's latest status once it says online (from ``instance``, if given)."""

        def found() -> dict[str, Any] | None:
            for topic, body in reversed(self.seen):
                if f"/{site}/" in topic:
                    ok = body["online"] and instance in (None, body.get("instance"))
                    return body if ok else None
            return None

        async with asyncio.timeout(WAIT_S), self.changed:
            await self.changed.wait_for(lambda: found() is not None)
        result = found()
        assert result is not None
        return result


def test_the_later_controller_yields_and_the_earlier_stays(
    tmp_path: Path, broker: MosquittoBroker
) -> None:
    async def scenario() -> None:
        statuses = Statuses()
        watcher = asyncio.create_task(statuses.run(broker))
        first = _controller(tmp_path, "first", "main-floor", broker)
        second: subprocess.Popen[str] | None = None
        other_site: subprocess.Popen[str] | None = None
        try:
            a = await statuses.online("main-floor")
            assert a["currency"] == "USD"
            assert a["started"]
            # The same table id at another site: its own session, no clash.
            other_site = _controller(tmp_path, "other", "demo", broker)
            await statuses.online("demo")

            second = _controller(tmp_path, "second", "main-floor", broker)
            code = await asyncio.to_thread(second.wait, WAIT_S)
            assert code == EXIT_IDENTITY
            said = (tmp_path / "second.log").read_text()
            assert f"instance {a['instance']}" in said
            assert "yields" in said
            # The earlier one is online again, as itself: the later one's own online
            # status, sent as it connected, is not the last word.
            b = await statuses.online("main-floor", instance=a["instance"])
            assert b["started"] == a["started"]
            assert first.poll() is None
            assert other_site.poll() is None
        finally:
            for proc in (first, second, other_site):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
                    await asyncio.to_thread(proc.wait, WAIT_S)
            watcher.cancel()
            while LOGS:
                LOGS.pop().close()
        first_log = (tmp_path / "first.log").read_text()
        assert "identity" not in (tmp_path / "other.log").read_text().lower()
        assert first_log

    asyncio.run(scenario())
