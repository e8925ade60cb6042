"""``table-controller demo`` run as a process: Ctrl-C (SIGINT to the process group, as
a terminal sends it) must stop a running demo cleanly, with the pit view or without,
and with the web pit it keeps serving the floor after its last round."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from table_controller.rigs.broker import MosquittoBroker, free_port
from table_controller.rigs.demo import SITE, TABLE_ID
from table_controller.rigs.rig import Observer
from tests.demo_rig import BROKER, add_up, parse_summary

STEP_S = 30.0
"""Bound on each wait for the demo process (startup included)."""


# ---------------------------------------------------------------- Ctrl-C


@dataclass
class DemoProcess:
    proc: asyncio.subprocess.Process

    async def line(self) -> str:
        assert self.proc.stdout is not None
        async with asyncio.timeout(STEP_S):
            raw = await self.proc.stdout.readline()
        assert raw, "the demo ended before it was stopped"
        return raw.decode().rstrip("\n")

    async def ctrl_c(self) -> tuple[int, str, str]:
        """SIGINT to the demo's process group, as a terminal's Ctrl-C; its exit and output."""
        os.killpg(self.proc.pid, signal.SIGINT)
        async with asyncio.timeout(STEP_S):
            out, err = await self.proc.communicate()
        assert self.proc.returncode is not None
        return self.proc.returncode, out.decode(), err.decode()


@asynccontextmanager
async def demo_process(*args: str) -> AsyncIterator[DemoProcess]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "table_controller.cli",
        "demo",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        # A process group of its own, like a job in a terminal.
        start_new_session=True,
        env={**os.environ, "COLUMNS": "160"},
    )
    try:
        yield DemoProcess(proc)
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.communicate()


async def test_ctrl_c_stops_a_headless_demo_cleanly() -> None:
    """Mid-game, with the embedded broker: exit 0, the summary of the rounds played."""
    async with demo_process("--headless", "--speed", "50", "--seed", "5") as demo:
        first = await demo.line()
        assert BROKER.match(first), first
        rc, out, err = await demo.ctrl_c()
    assert rc == 0, err
    assert "Traceback" not in err + out
    broker_line, *round_lines, summary = [first, *out.splitlines()]
    assert BROKER.match(broker_line), broker_line
    printed = parse_summary(summary)
    assert printed["stopped"]
    totals = add_up(round_lines)
    assert printed["rounds"] == len(round_lines) == len(totals.round_ids)
    assert printed["net"] == totals.net


async def test_ctrl_c_stops_the_pit_view_and_the_table_goes_offline(
    own_mosquitto: MosquittoBroker,
) -> None:
    """With the pit view and an external broker: the table's final status is offline.

    The stop comes the moment the table publishes its first round record, before the
    demo's own subscriber may have it: the summary counts that round all the same."""
    observer = Observer(own_mosquitto.url, f"casino/{SITE}/table/{TABLE_ID}/#")
    await observer.start()
    try:
        async with demo_process("--broker", own_mosquitto.url, "--speed", "50", "--seed", "6") as d:
            await observer.wait(lambda o: bool(o.of("rounds")), STEP_S)
            rc, out, err = await d.ctrl_c()
        await observer.wait(lambda o: o.of("status")[-1]["online"] is False, STEP_S)
    finally:
        await observer.close()
    assert rc == 0, err
    assert "Traceback" not in err + out
    printed = parse_summary(out.splitlines()[-1])
    assert printed["stopped"]
    assert printed["rounds"] == len(observer.of("rounds"))


async def test_the_demo_broker_is_found_at_its_port_and_ctrl_c_counts_alerts_as_raised() -> None:
    """--broker-port fixes the embedded broker's port; the Ctrl-C summary counts the
    alerts the table raised, as the pit does, a round cut short included."""
    port = free_port()
    args = ["--headless", "--broker-port", str(port), "--speed", "5", "--seed", "3"]
    async with demo_process(*args, "--misreads", "1", "--past-posts", "0") as demo:
        first = await demo.line()
        m = BROKER.match(first)
        assert m, first
        assert int(m["port"]) == port
        observer = Observer(f"mqtt://127.0.0.1:{port}", f"casino/{SITE}/table/{TABLE_ID}/#")
        await observer.start()
        try:
            # Every dealt card is misread: the first MISREAD comes before its round's record.
            await observer.wait(
                lambda o: any(a["code"] == "MISREAD" for a in o.of("alerts")), STEP_S
            )
            rc, out, err = await demo.ctrl_c()
        finally:
            await observer.close()
    assert rc == 0, err
    printed = parse_summary(out.splitlines()[-1])
    raised = Counter(a["code"] for a in observer.of("alerts") if a["resolved_by"] is None)
    assert printed["alerts"] == sum(raised.values()) >= 1
    assert printed["codes"] == raised


WEB_LINE = re.compile(
    r"^web pit (?P<url>http://\S+)  \(user (?P<user>\S+), password (?P<pw>\S+)\)$"
)


async def test_headless_demo_with_web_plays_then_serves_the_floor_until_stopped() -> None:
    """``demo --headless --rounds N --tables 2 --web``: the rounds play on the first table,
    beside a second, then the web pit stays up."""
    import httpx

    async with demo_process(
        "--headless",
        "--rounds",
        "2",
        "--speed",
        "50",
        "--seed",
        "3",
        "--tables",
        "2",
        "--web",
        "127.0.0.1:0",
    ) as demo:
        assert BROKER.match(await demo.line())
        web = WEB_LINE.match(await demo.line())
        assert web is not None
        played = [await demo.line() for _ in range(2)]
        assert all(line.startswith("round") for line in played), played
        async with httpx.AsyncClient(base_url=web["url"], timeout=STEP_S) as client:
            login = await client.post("/login", data={"name": web["user"], "password": web["pw"]})
            assert login.status_code in (200, 303), login.text
            floor = await client.get("/")
            assert floor.status_code == 200
            assert TABLE_ID in floor.text
            assert "war-08" in floor.text  # the second table deals on the same floor
            wrong = await client.post("/login", data={"name": web["user"], "password": "nope"})
            assert wrong.status_code == 401
        assert demo.proc.returncode is None  # still serving after its last round
        rc, out, err = await demo.ctrl_c()
    assert rc == 0, err
    assert "summary" in out
