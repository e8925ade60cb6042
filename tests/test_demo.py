"""``table-controller demo``: a whole table played by a simulated dealer and players.

The headless runs are checked against what they print per round (the published
round records): the summary's figures must be the sums of those lines. Ctrl-C
(SIGINT to the process group, as a terminal sends it) must stop a running demo
cleanly, with the pit view or without.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller import cli
from table_controller.rigs.broker import MosquittoBroker, free_port
from table_controller.rigs.demo import SITE, TABLE_ID, money
from table_controller.rigs.rig import Observer

STEP_S = 30.0
"""Bound on each wait for the demo process (startup included)."""

ROUND = re.compile(
    r"^round\s+(?P<id>\d+)  dealer (?P<dealer>\S\S)(?: war (?P<dealer_war>\S\S))?  "
    r"(?P<hands>.+)  net (?P<net>\S+)  alerts (?P<alerts>\S+)$"
)
HAND = re.compile(
    r"^P(?P<pos>\d+) (?P<card>\S\S) (?P<outcome>win|lose|tie)(?: (?P<decision>war|surrender))?"
    r"(?: (?P<war_card>\S\S) (?P<war_outcome>win|lose|tie))?"
    r"(?P<ties>(?: (?:tie|war_tie) \$\d+\.\d\d (?:win|lose|void))*) (?P<net>[+-]\$\d+\.\d\d)$"
)
BROKER = re.compile(
    r"^broker mqtt://127\.0\.0\.1:(?P<port>\d+) \(watch: mosquitto_sub -h 127\.0\.0\.1 "
    r"-p (?P=port) -V mqttv(?:5|311) -t 'casino/demo/#' -v\)$"
)
SUMMARY = re.compile(
    r"^summary(?P<stopped> \(stopped\))?: rounds (?P<rounds>\d+), ties (?P<ties>\d+), "
    r"wars (?P<wars>\d+), surrenders (?P<surrenders>\d+), voids (?P<voids>\d+), "
    r"alerts (?P<alerts>\d+)(?: \((?P<codes>[^)]*)\))?, players' net (?P<net>\S+)$"
)
MQTT_311_WARNING = "MQTT 3.1.1 (mqtt.protocol): the broker cannot report refused publishes"


def cents(text: str) -> int:
    """``+$25.00`` → 2500, ``-$12.50`` → -1250."""
    m = re.fullmatch(r"([+-])\$(\d+)\.(\d\d)", text)
    assert m, f"not an amount: {text!r}"
    value = int(m[2]) * 100 + int(m[3])
    return -value if m[1] == "-" else value


@dataclass
class Totals:
    """What the printed per-round lines add up to."""

    round_ids: list[int]
    ties: int
    wars: int
    surrenders: int
    alerts: Counter[str]
    net: int
    tie_wagers: int = 0


def add_up(lines: list[str]) -> Totals:
    totals = Totals([], 0, 0, 0, Counter(), 0)
    for line in lines:
        m = ROUND.match(line)
        assert m, f"not a round line: {line!r}"
        totals.round_ids.append(int(m["id"]))
        hands = [HAND.match(h) for h in m["hands"].split(" | ")]
        assert all(hands), f"a hand that does not parse in {line!r}"
        hand_nets = 0
        for h in hands:
            assert h is not None
            totals.ties += h["outcome"] == "tie"
            totals.wars += h["decision"] == "war"
            totals.surrenders += h["decision"] == "surrender"
            # A war hand has a war card, and so does the dealer.
            assert (h["decision"] == "war") == (h["war_card"] is not None), line
            if h["war_card"] is not None:
                assert m["dealer_war"] is not None, line
            hand_nets += cents(h["net"])
            totals.tie_wagers += h["ties"].count("tie ")
        assert cents(m["net"]) == hand_nets, f"the round's net is not its hands' sum: {line!r}"
        totals.net += hand_nets
        if m["alerts"] != "-":
            totals.alerts.update(m["alerts"].split(","))
    return totals


def parse_summary(line: str) -> dict[str, Any]:
    m = SUMMARY.match(line)
    assert m, f"not a summary line: {line!r}"
    codes: Counter[str] = Counter()
    for part in (m["codes"] or "").split(", "):
        if part:
            code, n = part.split(" ")
            codes[code] = int(n)
    return {
        "stopped": m["stopped"] is not None,
        "rounds": int(m["rounds"]),
        "ties": int(m["ties"]),
        "wars": int(m["wars"]),
        "surrenders": int(m["surrenders"]),
        "voids": int(m["voids"]),
        "alerts": int(m["alerts"]),
        "codes": codes,
        "net": cents(m["net"]),
    }


@given(st.integers(min_value=-(10**9), max_value=10**9))
@settings(max_examples=200)
def test_amounts_print_and_read_back(value: int) -> None:
    assert cents(money(value)) == value


# ---------------------------------------------------------------- headless runs


@pytest.mark.parametrize(
    ("broker_impl", "rules", "seed"),
    [("mosquitto", "ny", 10), ("amqtt", "uk", 11)],
    # Seeds chosen so that five rounds hold both a war and a surrender.
    ids=["mosquitto-ny-seed10", "amqtt-uk-seed11"],
)
def test_headless_summary_is_what_the_round_records_say(
    broker_impl: str,
    rules: str,
    seed: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    summary_file = tmp_path / "summary.json"
    rc = cli.main(
        [
            "demo",
            "--rounds",
            "5",
            "--headless",
            "--speed",
            "50",
            "--seed",
            str(seed),
            "--rules",
            rules,
            "--broker-impl",
            broker_impl,
            "--misreads",
            "0.3",
            "--past-posts",
            "1",
            "--json-summary",
            str(summary_file),
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = out.splitlines()
    # The broker's address comes first, headless too, so the feed can be watched.
    broker_line, *round_lines, summary = lines
    assert BROKER.match(broker_line), broker_line
    totals = add_up(round_lines)
    assert totals.round_ids == [1, 2, 3, 4, 5]
    assert totals.wars >= 1, "the seed no longer plays a war"
    assert totals.surrenders >= 1, "the seed no longer plays a surrender"
    # Tie wagers are on the round lines: a won hand with a lost tie wager reads right.
    assert totals.tie_wagers >= 1, "the seed no longer plays a tie wager"

    printed = parse_summary(summary)
    expected = {
        "stopped": False,
        "rounds": 5,
        "ties": totals.ties,
        "wars": totals.wars,
        "surrenders": totals.surrenders,
        "voids": 0,
        "alerts": sum(totals.alerts.values()),
        "codes": totals.alerts,
        "net": totals.net,
    }
    assert printed == expected

    written = json.loads(summary_file.read_text())
    assert written["interrupted"] is False
    assert written["problems"] == []
    assert (
        written["rounds"],
        written["ties"],
        written["wars"],
        written["surrenders"],
        written["alerts"],
        Counter(written["alerts_by_code"]),
        written["players_net"],
    ) == (
        5,
        totals.ties,
        totals.wars,
        totals.surrenders,
        sum(totals.alerts.values()),
        totals.alerts,
        totals.net,
    )
    # Every alert of the run was a mistake the players or the shoe made, and was recorded:
    # a past-post each round (--past-posts 1) and the misreads the dealer keyed in.
    assert Counter(written["caused_by_code"]) == totals.alerts
    assert totals.alerts["PAST_POSTING"] == 5
    assert totals.alerts["MISREAD"] >= 1
    # docs/feed.md: the table on a 3.1.1 broker says it cannot see refusals.
    assert (MQTT_311_WARNING in err) == (broker_impl == "amqtt")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "rc", "says"),
    [
        (["--broker", "mqtt://127.0.0.1:1", "--broker-impl", "amqtt"], 2, "--broker-impl"),
        (["--broker", "http://127.0.0.1:1"], 2, "expected mqtt://"),
        (["--protocol", "3.1.1"], 2, "--protocol is for --broker"),
        (["--headless", "--broker", "mqtt://127.0.0.1:{refused}"], 1, "cannot connect"),
    ],
    ids=["impl-with-broker", "bad-url", "protocol-without-broker", "no-broker-there"],
)
def test_bad_options_and_a_missing_broker_are_told_plainly(
    args: list[str], rc: int, says: str, capsys: pytest.CaptureFixture[str], refused_port: int
) -> None:
    # The port is taken when the test runs, and held: chosen at collection, it could be
    # another test's broker by then.
    args = [a.format(refused=refused_port) for a in args]
    assert cli.main(["demo", *args]) == rc
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err


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
