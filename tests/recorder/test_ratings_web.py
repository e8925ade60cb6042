"""Sessions, hold flags and chain findings on the web pit, in a real headless Chromium."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser

from bench.seeder import Seat, Seeder
from table_controller.recorder.ratings.sessions import sessions
from table_controller.recorder.web.views import money
from table_controller.rigs.broker import MosquittoBroker
from tests.web.harness import (
    PASSWORD,
    USER,
    PitServer,
    chromium,
    new_site,
    pit_server,
    signed_in,
)

WIN, LOSE = Seat(1000, "win"), Seat(2500, "lose", tie=500)
SURRENDER = Seat(1000, "tie", "surrender")


@pytest.fixture
async def pit(mosquitto: MosquittoBroker, tmp_path: Path) -> AsyncIterator[PitServer]:
    async with pit_server(mosquitto.url, tmp_path, new_site()) as server:
        yield server


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as b:
        yield b


def _recent() -> datetime:
    return datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=30)


async def test_the_table_page_shows_each_seats_sessions(pit: PitServer, browser: Browser) -> None:
    seeder = Seeder(pit.db, site=pit.site, table="seats", start=_recent())
    await seeder.status()
    for seat in (WIN, LOSE, SURRENDER, WIN):
        await seeder.round({2: seat, 5: LOSE})
    expected = await sessions(pit.db, site=pit.site, table="seats")
    page = await signed_in(browser, pit.url)
    await page.goto(f"{pit.url}/table/{pit.site}/seats")
    rows = page.locator("#sessions tr.session")
    assert await rows.count() == 2
    for row, s in zip(await rows.all(), expected, strict=True):
        assert await row.get_attribute("data-position") == str(s["position"])
        assert await row.locator(".theo").inner_text() == money(s["theo"])
        assert await row.locator(".net").inner_text() == money(s["actual"])
    assert await page.locator("#findings").count() == 0


async def test_hold_variance_and_a_chain_break_stand_out(pit: PitServer, browser: Browser) -> None:
    start = _recent()
    ordinary = Seeder(pit.db, site=pit.site, table="ordinary", start=start)
    pushed = Seeder(pit.db, site=pit.site, table="pushed", start=start, sealed=True)
    even = [WIN, Seat(1000, "lose")] * 10  # the house wins nothing: well inside theo ± 2 sd
    for seeder, seats in ((ordinary, even), (pushed, [LOSE] * 20)):
        await seeder.status()
        for seat in seats:
            await seeder.round({1: seat})
    await pushed.store(pushed.record({1: LOSE}) | {"net": 0})  # altered after sealing
    page = await signed_in(browser, pit.url)
    await page.goto(f"{pit.url}/")
    flags = page.locator(f'[data-table="{pit.site}/pushed"] .flag')
    assert sorted(await flags.all_inner_texts()) == ["CHAIN_BREAK", "HOLD_VARIANCE"]
    assert await page.locator(f'[data-table="{pit.site}/ordinary"] .flag').count() == 0
    await page.goto(f"{pit.url}/report")
    assert await page.locator('tr[data-table$="/pushed"] [data-flag="HOLD_VARIANCE"]').count() == 1
    await page.goto(f"{pit.url}/table/{pit.site}/pushed")
    assert await page.locator("#findings .finding").get_attribute("data-round") == "21"


async def test_the_api_answers_sessions_pace_and_findings(pit: PitServer) -> None:
    seeder = Seeder(pit.db, site=pit.site, table="api", start=_recent())
    await seeder.dealer_changed("D-3")
    for seat in (WIN, LOSE, WIN):
        await seeder.round({1: seat})
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    headers = {"Authorization": f"Basic {token}"}
    async with httpx.AsyncClient(base_url=pit.url, headers=headers) as client:
        got = await client.get("/api/sessions", params={"site": pit.site, "table": "api"})
        assert got.status_code == 200
        assert got.json() == await sessions(pit.db, site=pit.site, table="api")
        pace = (await client.get("/api/pace", params={"site": pit.site})).json()
        assert [(d["dealer"], d["rounds"]) for d in pace["dealer_sessions"]] == [("D-3", 3)]
        assert (await client.get("/api/findings")).json() == []
        bad = await client.get("/api/sessions", params={"table": "api"})
        assert bad.status_code == 400
        assert "site" in bad.text
        unknown = await client.get("/api/sessions", params={"site": pit.site, "table": "nope"})
        assert unknown.status_code == 404
        assert (await client.get("/api/sessions", params={"end_after": "0"})).status_code == 400
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert {"/api/sessions", "/api/pace", "/api/findings"} <= set(paths)
