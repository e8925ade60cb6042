"""Table, alerts and report pages in a real Chromium, against stored round records."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page

from table_controller.recorder import queries
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import TableRig
from tests.web.harness import PitServer, confirm, past_post, signed_in, tables

Shoot = Callable[[Page, str], Awaitable[Path]]
WAIT_MS = 15_000
BURNS = frozenset({"burn", "war_burn"})


async def _stored(pit: PitServer, table: str, count: int) -> list[dict[str, Any]]:
    """Wait (on the recorder's commits) until ``count`` rounds of ``table`` are stored."""
    # The query runs under the condition's lock, which the recorder holds to notify:
    # a commit between the query and the wait cannot be missed.
    async with asyncio.timeout(WAIT_MS / 1000), pit.recorder.committed:
        while len(found := await queries.rounds(pit.db, pit.site, table, last=count)) < count:
            await pit.recorder.committed.wait()
    return found


async def test_the_table_page_shows_the_last_10_hands_card_for_card(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser, shoot: Shoot
) -> None:
    async with tables(mosquitto.url, tmp_path, pit.site, 1, seed=11) as rigs:
        rig, dealer = rigs[0]
        await dealer.play(12)
        records = await _stored(pit, rig.spec.table_id, 12)
        page = await signed_in(browser, pit.url)
        await page.goto(f"{pit.url}/table/{pit.site}/{rig.spec.table_id}")
        shown = await page.eval_on_selector_all(
            "tr.round",
            """rows => rows.map(r => ({
                round_id: Number(r.dataset.round),
                dealer: r.querySelector('[data-role=dealer]').textContent.trim(),
                dealer_war: r.querySelector('[data-role=war_dealer]')?.textContent.trim() ?? null,
                burns: Number(r.children[3].textContent.trim()),
                hands: Array.from(r.querySelectorAll('li.hand')).map(h => ({
                    position: Number(h.dataset.position),
                    card: h.querySelector('[data-role=position]').textContent.trim(),
                    war: h.querySelector('[data-role=war_position]')?.textContent.trim() ?? null,
                    net: h.querySelector('.net').textContent.trim(),
                })),
            }))""",
        )
        expected = [
            {
                "round_id": r["round_id"],
                "dealer": r["dealer_card"],
                "dealer_war": r["dealer_war_card"],
                "burns": sum(c["role"] in BURNS for c in r["cards"]),
                "hands": [
                    {
                        "position": p["position"],
                        "card": p["card"],
                        "war": p["war_card"],
                        "net": _money(p["net"]),
                    }
                    for p in r["positions"]
                ],
            }
            for r in records[:10]
        ]
        assert shown == expected
        # Burns are counted, never shown (§(h)(1)): a row shows exactly the other cards.
        cards_shown = await page.eval_on_selector_all(
            "tr.round", "rows => rows.map(r => r.querySelectorAll('.card').length)"
        )
        assert cards_shown == [
            sum(c["role"] not in BURNS for c in r["cards"]) for r in records[:10]
        ]
        await page.wait_for_selector("svg.chart rect.bar")
        await shoot(page, "table")


def _money(cents: int | None) -> str:
    if cents is None:
        return "-"
    whole, part = divmod(abs(cents), 100)
    return f"{'-' if cents < 0 else ''}{whole:,}.{part:02d}"


async def test_a_critical_alert_stands_out_on_the_floor_and_the_alerts_page_until_resolved(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser, shoot: Shoot
) -> None:
    async with tables(mosquitto.url, tmp_path, pit.site, 2) as rigs:
        rig: TableRig = rigs[0][0]
        key = f"{pit.site}/{rig.spec.table_id}"
        floor = await signed_in(browser, pit.url)
        alerts = await signed_in(browser, pit.url)
        await alerts.goto(f"{pit.url}/alerts")
        for page in (floor, alerts):
            await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
        await floor.wait_for_selector(f'li.tile[data-table="{key}"]', timeout=WAIT_MS)
        assert await floor.locator("li.tile.critical").count() == 0
        await past_post(rig)

        tile = floor.locator(f'li.tile.critical[data-table="{key}"]')
        await tile.wait_for(timeout=WAIT_MS)
        assert "PAST_POSTING" in await tile.inner_text()
        # It stands out: a different background from a quiet tile's, and listed first.
        quiet = floor.locator("li.tile:not(.critical)").first
        assert await _background(tile) != await _background(quiet)
        assert await floor.locator("li.tile").first.get_attribute("data-table") == key
        row = alerts.locator(f'tr[data-table="{key}"]')
        await row.wait_for(timeout=WAIT_MS)
        assert "PAST_POSTING" in await row.inner_text()
        assert (await row.locator(".open-for").inner_text()).endswith(("s", "min"))
        await shoot(floor, "floor-critical")
        await shoot(alerts, "alerts")
        # The table's own page: the held round's layout now, the alert open on its timeline.
        table = await signed_in(browser, pit.url)
        await table.goto(f"{pit.url}/table/{key}")
        now = await table.inner_text("#now")
        assert "HELD" in now
        assert "P1\tinitial 50.00" in await table.inner_text("table.layout")  # as sensed now
        assert "PAST_POSTING" in await table.inner_text(".timeline li.open")
        # The report, with a table that has raised an alert and stored no round yet.
        answer = await table.goto(f"{pit.url}/report?site={pit.site}")
        assert answer is not None
        assert answer.status == 200
        assert "PAST_POSTING" in await table.inner_text(f'tr[data-table="{key}"]')

        await confirm(rig)
        await floor.wait_for_selector("li.tile.critical", state="detached", timeout=WAIT_MS)
        await alerts.wait_for_selector("#no-alerts", timeout=WAIT_MS)
        # The table page's timeline is the shift's: not an alert of a later one.
        before = datetime.now(UTC) - timedelta(hours=12)
        window = f"from={before - timedelta(hours=8):%Y-%m-%dT%H:%MZ}&to={before:%Y-%m-%dT%H:%MZ}"
        await table.goto(f"{pit.url}/table/{key}?{window}")
        assert "No alert this shift." in await table.inner_text("#main")


async def _background(locator: Any) -> str:
    value: str = await locator.evaluate("el => getComputedStyle(el).backgroundColor")
    return value


async def test_the_report_totals_equal_the_sums_over_the_round_records(
    any_pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser, shoot: Shoot
) -> None:
    pit = any_pit
    async with tables(mosquitto.url, tmp_path, pit.site, 2, seed=5) as rigs:
        for (rig, dealer), count in zip(rigs, (6, 4), strict=True):
            await dealer.play(count)
            await _stored(pit, rig.spec.table_id, count)
        records = [
            r
            for rig, _ in rigs
            for r in await queries.rounds(pit.db, pit.site, rig.spec.table_id, last=100)
        ]
        page = await signed_in(browser, pit.url)
        await page.goto(f"{pit.url}/report?site={pit.site}")
        total = page.locator("tr.total")
        dealt = [r for r in records if not r["void"]]
        handle = sum(w["amount"] or 0 for r in dealt for p in r["positions"] for w in p["wagers"])
        win = -sum(r["net"] or 0 for r in dealt)
        assert await total.locator('[data-col="rounds"]').inner_text() == str(len(dealt))
        assert await total.locator('[data-col="handle"]').get_attribute("data-cents") == str(handle)
        assert await total.locator('[data-col="win"]').get_attribute("data-cents") == str(win)
        assert await total.locator('[data-col="win"]').inner_text() == _money(win)
        for name, field in (("ties", "ties"), ("wars", "wars"), ("surrenders", "surrenders")):
            expected = sum(_count(r, field) for r in dealt)
            assert await total.locator(f'[data-col="{name}"]').inner_text() == str(expected)
        await page.wait_for_selector("svg.chart rect.bar")
        await shoot(page, "report")

        async with page.expect_download() as download:
            await page.click("text=Export CSV")
        saved = tmp_path / "report.csv"
        await (await download.value).save_as(saved)
        last = saved.read_text(encoding="utf-8").splitlines()[-1].split(",")
        assert last[1:6] == ["TOTAL", str(len(dealt)), last[3], str(handle), str(win)]
        # A round later the page has moved on, live: so has its export.
        await rigs[0][1].play(1)
        rounds = total.locator('[data-col="rounds"]')
        await page.wait_for_function(
            "n => document.querySelector('tr.total [data-col=\"rounds\"]').textContent == n",
            arg=str(len(dealt) + 1),
            timeout=15_000,
        )
        assert await rounds.inner_text() == str(len(dealt) + 1)
        async with page.expect_download() as download:
            await page.click("text=Export CSV")
        await (await download.value).save_as(saved)
        last = saved.read_text(encoding="utf-8").splitlines()[-1].split(",")
        assert last[1:3] == ["TOTAL", str(len(dealt) + 1)]


def _count(record: dict[str, Any], field: str) -> int:
    positions = record["positions"]
    if field == "ties":
        return sum(p["outcome"] == "tie" for p in positions)
    decision = {"wars": "war", "surrenders": "surrender"}[field]
    return sum(p["decision"] == decision for p in positions)


async def test_a_wrong_password_is_refused(pit: PitServer, browser: Browser, shoot: Shoot) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(pit.url)
    assert page.url.startswith(f"{pit.url}/login")  # every page needs a login
    await page.fill("#name", "pit-boss")
    await page.fill("#password", "not-the-password")
    await page.click("button[type=submit]")
    await page.wait_for_selector("#login-error")
    assert "/login" in page.url
    await shoot(page, "login-refused")
    answer = await page.request.get(f"{pit.url}/api/tables")
    assert answer.status == 401
    await context.close()
