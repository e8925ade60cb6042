"""Fixtures of the web tests: a recorder with its pages, tables, Chromium, screenshots."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from bench.pg_server import PostgresServer
from table_controller.rigs.broker import MosquittoBroker
from tests.web.harness import PitServer, chromium, new_site, pit_server


@pytest.fixture
async def pit(mosquitto: MosquittoBroker, tmp_path: Path) -> AsyncIterator[PitServer]:
    async with pit_server(mosquitto.url, tmp_path, new_site()) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
async def any_pit(
    request: pytest.FixtureRequest, mosquitto: MosquittoBroker, tmp_path: Path
) -> AsyncIterator[PitServer]:
    """The pit on each database: SQLite, and PostgreSQL (production's; Debian's server in a
    temp folder)."""
    if request.param == "sqlite":
        async with pit_server(mosquitto.url, tmp_path, new_site()) as server:
            yield server
        return
    with PostgresServer() as postgres:
        url = postgres.create_database()
        async with pit_server(mosquitto.url, tmp_path, new_site(), url) as server:
            yield server


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def shots_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: ``$PIT_SCREENSHOTS``, or a folder of the pytest tmp dir."""
    chosen = os.environ.get("PIT_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def shoot(shots_dir: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """``await shoot(page, "what")`` keeps a full-page screenshot as a test artefact."""

    async def take(page: Page, what: str) -> Path:
        path = shots_dir / f"{request.node.name}-{what}.png"
        await page.screenshot(path=str(path), full_page=True)
        return path

    return take
