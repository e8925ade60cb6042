"""A tablet and a keyboard: the floor fits a tablet's width, every control is reachable by
Tab and shows where the focus is."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Page

from table_controller.rigs.broker import MosquittoBroker
from tests.web.harness import PitServer, past_post, signed_in, tables

WAIT_MS = 15_000
TABLET_W = 768  # a tablet held upright
CONTROLS = 'a[href], button, input:not([type=hidden]), [tabindex="0"]'
# What names a control: its start, less a link's query and an input's value. A live update
# re-renders the page, and the report's window (its CSV link, its inputs) moves with the clock.
KEY_JS = (
    'el => el.outerHTML.replace(/\\?[^"]*"/, \'"\').replace(/ value="[^"]*"/, \'\').slice(0, 80)'
)


async def _tab_through(page: Page) -> list[dict[str, str]]:
    """Press Tab until the focus comes round again; what was focused, with its outline."""
    seen: list[dict[str, str]] = []
    total = await page.locator(CONTROLS).count()
    # A date-time input takes a Tab per field (day, month, year, hour, minute).
    for _ in range(total * 6 + 10):
        await page.keyboard.press("Tab")
        now = await page.evaluate(
            f"""() => {{ const el = document.activeElement;
                const s = getComputedStyle(el);
                return {{key: el === document.body ? "" : ({KEY_JS})(el),
                        outline: s.outlineStyle,
                        width: s.outlineWidth}}; }}"""
        )
        if not now["key"]:  # past the last control: the focus left the page
            if seen:
                break
            continue
        if seen and now["key"] == seen[0]["key"]:
            break
        seen.append(now)
    return seen


async def test_every_control_of_each_page_is_reached_by_tab_and_shows_its_focus(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser
) -> None:
    async with tables(mosquitto.url, tmp_path, pit.site, 2) as rigs:
        await rigs[0][1].play_round()
        page = await signed_in(browser, pit.url)
        for path in ("/", f"/table/{pit.site}/war-01", "/alerts", "/report"):
            await page.goto(f"{pit.url}{path}")
            await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
            controls = await page.eval_on_selector_all(CONTROLS, f"els => els.map({KEY_JS})")
            focused = await _tab_through(page)
            assert {f["key"] for f in focused} == set(controls), path
            plain = [f for f in focused if (f["outline"], f["width"]) != ("solid", "3px")]
            assert plain == [], path


async def test_the_floor_fits_a_tablet_in_a_grid_of_tiles(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser
) -> None:
    async with tables(mosquitto.url, tmp_path, pit.site, 3):
        page = await signed_in(browser, pit.url, width=TABLET_W)
        await page.wait_for_function(
            "() => document.querySelectorAll('li.tile').length === 3", timeout=WAIT_MS
        )
        overflow = await page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0
        tops = await page.eval_on_selector_all(
            "li.tile", "els => els.map(el => Math.round(el.getBoundingClientRect().top))"
        )
        assert tops[0] == tops[1]  # two tiles side by side, not a single column
        for path in (f"/table/{pit.site}/war-01", "/report"):
            await page.goto(f"{pit.url}{path}")
            wide = await page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert wide <= 0, path  # wide tables scroll inside their panel, not the page


PHONE_W = 390
TOUCH_PX = 44  # docs/web.md: touch targets at least 44 px high


async def test_every_page_fits_a_phone_with_touch_sized_targets(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser
) -> None:
    async with tables(mosquitto.url, tmp_path, pit.site, 1) as rigs:
        await rigs[0][1].play_round()
        await past_post(rigs[0][0])  # an open alert: the alerts page has its table
        page = await signed_in(browser, pit.url, width=PHONE_W)
        for path in ("/", f"/table/{pit.site}/war-01", "/alerts", "/report"):
            await page.goto(f"{pit.url}{path}")
            await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
            wide = await page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert wide <= 0, path
            small = await page.eval_on_selector_all(
                "a[href], button, input:not([type=hidden])",
                f"""els => els.filter(el => el.getClientRects().length)
                    .filter(el => el.getBoundingClientRect().height < {TOUCH_PX})
                    .map(el => el.outerHTML.slice(0, 80))""",
            )
            assert small == [], path


async def _updated(page: Page, after: int) -> None:
    """Wait for the live region's next swap (live.js counts them on the body)."""
    await page.wait_for_function(
        f"() => Number(document.body.dataset.updates || 0) > {after}", timeout=WAIT_MS
    )


async def _updates(page: Page) -> int:
    return int(await page.evaluate("() => Number(document.body.dataset.updates || 0)"))


async def test_focus_stays_on_the_same_control_across_a_live_update(
    pit: PitServer, mosquitto: MosquittoBroker, tmp_path: Path, browser: Browser
) -> None:
    async with tables(mosquitto.url, tmp_path, pit.site, 1) as rigs:
        rig, dealer = rigs[0]
        await dealer.play_round()
        page = await signed_in(browser, pit.url)
        # The report's scrolling figures: a region reached by Tab, with no link or id.
        await page.goto(f"{pit.url}/report")
        await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
        await page.focus('#live [aria-label="Report figures"]')
        count = await _updates(page)
        await past_post(rig)  # a change at the table: the region is fetched again
        await _updated(page, count)
        label = await page.evaluate("() => document.activeElement.getAttribute('aria-label')")
        assert label == "Report figures"
        # Two alerts of one table: the same link in two rows; focus keeps to its row.
        rig.bet(1, initial=5000, tie=500)  # the tie spot too: a second PAST_POSTING
        await page.goto(f"{pit.url}/alerts")
        rows = page.locator("#live tr[data-alert]")
        await page.wait_for_function(
            "() => document.querySelectorAll('#live tr[data-alert]').length === 2",
            timeout=WAIT_MS,
        )
        second = await rows.nth(1).get_attribute("data-alert")
        await rows.nth(1).locator("a").focus()
        count = await _updates(page)
        rig.bet(1, initial=5000, tie=500, war=500)  # a third: the page is swapped again
        await _updated(page, count)
        focused = await page.evaluate(
            "() => document.activeElement.closest('tr[data-alert]')?.dataset.alert"
        )
        assert focused == second
        await page.close()
