"""Real parts for the browser tests and the screenshot script: a recorder serving the pit
pages over a real broker, tables of the loopback rig, and headless Chromium.

Shared by ``tests/web/conftest.py`` and ``python -m tests.web.screenshots``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from playwright.async_api import Browser, Page, async_playwright

from table_controller.recorder.store.backend import Backend
from table_controller.recorder.subscriber import Recorder
from table_controller.recorder.web.embedded import embedded_pit
from table_controller.recorder.web.users import add_user
from table_controller.rigs.dealer import Dealer
from table_controller.rigs.people import Habits, Pace
from table_controller.rigs.rig import TableRig, TableSpec

CHROMIUM: Final = "/usr/bin/chromium"
CHROMIUM_ARGS: Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
USER: Final = "pit-boss"
PASSWORD: Final = "green-felt-42"
FAST: Final = Pace(bet_s=0, card_s=0, decision_s=0, notice_s=0, between_rounds_s=0)
CALM: Final = Habits(misread=0.0, past_post=0.0)


def new_site() -> str:
    """A site of its own: the session's broker keeps other tests' retained messages."""
    return f"web-{uuid.uuid4().hex[:8]}"


def make_users(path: Path) -> Path:
    add_user(path, USER, PASSWORD)
    return path


@dataclass
class PitServer:
    url: str
    db: Backend
    recorder: Recorder
    site: str


@asynccontextmanager
async def pit_server(
    broker_url: str, workdir: Path, site: str, database_url: str | None = None
) -> AsyncIterator[PitServer]:
    """A recorder of ``site`` (on SQLite unless ``database_url``), its pages and API on a
    free port."""
    users = make_users(workdir / "pit-users")
    async with embedded_pit(
        broker_url,
        [site],
        workdir,
        users_file=users,
        database_url=database_url,
        name=f"rec-{site}",
    ) as pit:
        yield PitServer(pit.url, pit.db, pit.recorder, site)


@asynccontextmanager
async def tables(
    broker_url: str, workdir: Path, site: str, count: int, *, seed: int = 7
) -> AsyncIterator[list[tuple[TableRig, Dealer]]]:
    """``count`` tables of the loopback rig, open for play, each with a quick dealer."""
    rigs: list[tuple[TableRig, Dealer]] = []
    try:
        for i in range(count):
            folder = workdir / f"table-{i + 1}"
            folder.mkdir()
            spec = TableSpec(table_id=f"war-{i + 1:02d}", site=site, seed=seed + i)
            rig = TableRig(broker_url, folder, spec)
            await rig.__aenter__()
            rigs.append((rig, Dealer(rig, seed=seed + i, pace=FAST, habits=CALM)))
            await rig.start_controller()
        for _, dealer in rigs:
            await dealer.open_table()
        yield rigs
    finally:
        for rig, _ in reversed(rigs):
            await rig.__aexit__(None, None, None)


async def past_post(rig: TableRig) -> None:
    """Chips added to a playing wager after "no more bets" (§(g)(2)): PAST_POSTING."""
    await rig.wait_state(lambda s: s["phase"] == "betting" and not s["held"])
    rig.bet(1, initial=2500)
    await rig.wait_wagers({1: {"initial": 2500}})
    assert await rig.press("NO_MORE_BETS") is None
    rig.bet(1, initial=5000)
    await rig.wait(
        lambda o: any(
            a["code"] == "PAST_POSTING" and a["resolved_by"] is None for a in o.of("alerts")
        )
    )


async def confirm(rig: TableRig) -> None:
    rig.bet(1, initial=2500)
    await rig.wait_wagers({1: {"initial": 2500}})
    assert await rig.press("CONFIRM") is None
    await rig.wait(lambda o: any(a["resolved_by"] is not None for a in o.of("alerts")))


def _chromium() -> str:
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"{CHROMIUM}: no Chromium: install Debian's (`make system`)")
    return CHROMIUM


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless: never a browser downloaded by Playwright."""
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def signed_in(browser: Browser, url: str, *, width: int = 1280) -> Page:
    """A page in a fresh context (its own cookies), signed in as the pit user."""
    context = await browser.new_context(viewport={"width": width, "height": 900})
    page = await context.new_page()
    await page.goto(f"{url}/login")
    await page.fill("#name", USER)
    await page.fill("#password", PASSWORD)
    async with page.expect_navigation():
        await page.click("button[type=submit]")
    return page
