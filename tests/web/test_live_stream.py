"""The live stream a page depends on, in a real Chromium: a link gone silent is opened
again, a user signed out hears nothing more and lands on the form, and hidden pages let
their streams go so that six pages in one browser still update (HTTP/1.1: six
connections to a host)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser

from table_controller.recorder.web import api
from table_controller.recorder.web.users import remove_user
from table_controller.rigs.broker import MosquittoBroker
from tests.web.freezing_relay import FreezingRelay
from tests.web.harness import PASSWORD, USER, PitServer, signed_in, tables

WAIT_MS = 15_000
KEEPALIVE_S = 0.5  # the stream's ping, lowered so that what waits on it is quick
HIDE = """() => {
    Object.defineProperty(document, "hidden", { value: true, configurable: true });
    Object.defineProperty(document, "visibilityState", { value: "hidden", configurable: true });
    document.dispatchEvent(new Event("visibilitychange"));
}"""


@pytest.fixture(autouse=True)
def quick_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "LIVE_KEEPALIVE_S", KEEPALIVE_S)


async def test_a_stream_gone_silent_is_opened_again(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser
) -> None:
    relay = FreezingRelay(int(pit.url.rsplit(":", 1)[1]))
    url = await relay.start()
    try:
        async with tables(mosquitto.url, tmp_path, pit.site, 1) as rigs:
            rig, dealer = rigs[0]
            tile = f'li.tile[data-table="{pit.site}/{rig.spec.table_id}"]'
            page = await signed_in(browser, url)
            await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
            relay.freeze()  # the open stream carries nothing more; a new one would
            await dealer.play_round()
            await page.wait_for_selector(f'{tile}[data-rounds-today="1"]', timeout=WAIT_MS)
            await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
            await page.context.close()
    finally:
        await relay.close()


async def test_a_user_removed_hears_nothing_more_and_the_page_asks_for_a_sign_in(
    pit: PitServer, tmp_path: Path, browser: Browser
) -> None:
    page = await signed_in(browser, pit.url)
    await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
    async with (
        httpx.AsyncClient(base_url=pit.url, timeout=30) as http,
        http.stream("GET", "/api/live", auth=(USER, PASSWORD)) as stream,
    ):
        assert stream.status_code == 200
        chunks = stream.aiter_bytes()
        await anext(chunks)  # open
        remove_user(tmp_path / "pit-users", USER)
        async with asyncio.timeout(WAIT_MS / 1000):
            async for _ in chunks:  # pings until the next check, then the end
                pass
    await page.wait_for_url("**/login**", timeout=WAIT_MS)
    await page.context.close()


async def test_six_pages_in_one_browser_update_when_the_hidden_ones_let_go(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser
) -> None:
    async with tables(mosquitto.url, tmp_path, pit.site, 1) as rigs:
        rig, dealer = rigs[0]
        key = f"{pit.site}/{rig.spec.table_id}"
        floor = await signed_in(browser, pit.url)
        await floor.wait_for_selector("#live-state.on", timeout=WAIT_MS)
        others = []
        for path in ("/alerts", "/report", f"/table/{key}", f"/table/{key}", f"/table/{key}"):
            other = await floor.context.new_page()
            await other.goto(f"{pit.url}{path}", wait_until="commit", timeout=WAIT_MS)
            await other.wait_for_selector("#live-state.on", timeout=WAIT_MS)
            await other.evaluate(HIDE)  # behind the floor's tab
            await other.wait_for_selector("#live-state:not(.on)", timeout=WAIT_MS)
            others.append(other)
        await dealer.play_round()
        await floor.wait_for_selector(
            f'li.tile[data-table="{key}"][data-rounds-today="1"]', timeout=WAIT_MS
        )
        await floor.context.close()
