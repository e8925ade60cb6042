"""A screenshot of each page of the web pit, from demo tables (``python -m tests.web.screenshots``).

Starts a real Mosquitto, three tables of the loopback rig, the recorder with
its pages, plays a few rounds at each table, leaves a past-posting alert open
at the first, and saves ``floor``, ``table``, ``alerts``, ``report`` and
``login`` PNGs to ``docs/screenshots/`` (or ``--out``), as a tablet held
sideways shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from table_controller.rigs.broker import MosquittoBroker
from tests.web.harness import chromium, new_site, past_post, pit_server, signed_in, tables

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = (9, 6, 12)
WIDTH = 1180  # a 10-inch tablet in landscape, in CSS pixels
WAIT_MS = 15_000


async def take(out: Path, workdir: Path) -> list[Path]:
    saved: list[Path] = []
    with MosquittoBroker() as broker:
        site = "main-floor-" + new_site().removeprefix("web-")[:4]
        async with (
            pit_server(broker.url, workdir, site) as pit,
            tables(broker.url, workdir, site, len(ROUNDS)) as rigs,
            chromium() as browser,
        ):
            for (_, dealer), count in zip(rigs, ROUNDS, strict=True):
                await dealer.play(count)
            await past_post(rigs[0][0])
            page = await signed_in(browser, pit.url, width=WIDTH)
            await page.wait_for_selector("li.tile.critical", timeout=WAIT_MS)
            for name, path in (
                ("floor", "/"),
                ("table", f"/table/{site}/{rigs[2][0].spec.table_id}"),
                ("alerts", "/alerts"),
                ("report", "/report"),
            ):
                await page.goto(f"{pit.url}{path}")
                await page.wait_for_selector("#live-state.on", timeout=WAIT_MS)
                saved.append(out / f"{name}.png")
                await page.screenshot(path=str(saved[-1]), full_page=True)
            login = await (
                await browser.new_context(viewport={"width": WIDTH, "height": 700})
            ).new_page()
            await login.goto(f"{pit.url}/login")
            saved.append(out / "login.png")
            await login.screenshot(path=str(saved[-1]))
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.web.screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pit-shots-") as folder:
        for path in asyncio.run(take(args.out, Path(folder))):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
