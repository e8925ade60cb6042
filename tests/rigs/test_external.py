"""``scenario run --external`` as a bench runs it: the table PC's controller as its own
process on one end of two null-modem cables (socat pty pairs), the rig on the other
ends, the sensor board at the address the table's config names, and every shipped
scenario played on that one controller."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from table_controller.cli import main
from table_controller.rigs.broker import MosquittoBroker, free_port
from table_controller.rigs.errors import RigConfigError
from table_controller.rigs.observer import Observer
from table_controller.rigs.rig import TableSpec
from table_controller.rigs.scenario import LoadedScenario, load_scenario, shipped_scenarios
from table_controller.rigs.scenario.external import ExternalTable, run_external
from table_controller.rigs.scenario.report import format_result, junit_xml
from table_controller.rigs.scenario.rigfile import load_rig
from tests.devices.socat import SocatCable
from tests.rigs.bench import TablePC

pytestmark = pytest.mark.skipif(shutil.which("socat") is None, reason="needs socat")

SITE = "bench"


def _group_key(loaded: LoadedScenario) -> tuple[Any, ...]:
    t = loaded.scenario.table
    limits = tuple(sorted((k, tuple(v)) for k, v in t.limits.items()))
    return (t.rules.value, t.deck_count, t.positions, limits, tuple(sorted(t.profile.items())))


def _groups() -> dict[tuple[Any, ...], list[LoadedScenario]]:
    groups: dict[tuple[Any, ...], list[LoadedScenario]] = defaultdict(list)
    for path in shipped_scenarios():
        loaded = load_scenario(path)
        groups[_group_key(loaded)].append(loaded)
    return dict(groups)


GROUPS = _groups()
NY: tuple[Any, ...] = ("ny", 6, 7, (), ())


def _spec(key: tuple[Any, ...], table: str) -> TableSpec:
    rules, decks, positions, limits, profile = key
    return TableSpec(
        table_id=table,
        site=SITE,
        rules=rules,
        decks=decks,
        positions=positions,
        limits=dict(limits),
        profile=dict(profile),
    )


@dataclass
class Bench:
    """Two cables, a table PC on their table ends and the rig file for their rig ends."""

    pc: TablePC
    table: str
    rig_toml: Path
    shoe: SocatCable


@asynccontextmanager
async def bench(
    tmp_path: Path, broker: str, key: tuple[Any, ...] = NY, *, commands: bool = True
) -> AsyncIterator[Bench]:
    """A table of its own per bench (nothing retained from another run is seen), the
    controller running on the table ends, and ``rig.toml`` naming the rig ends."""
    table = f"war-{uuid.uuid4().hex[:6]}"
    sensors = f"127.0.0.1:{free_port()}"
    shoe, console = SocatCable(tmp_path / "shoe"), SocatCable(tmp_path / "console")
    for cable in (shoe, console):
        cable.rig_link.parent.mkdir()
        await cable.plug()
    try:
        pc = TablePC(
            tmp_path / "table-pc",
            _spec(key, table),
            # Stable names for the ends, as udev gives a table PC's adapters.
            shoe=str(shoe.table_link),
            console=str(console.table_link),
            sensors=sensors,
            broker=broker,
        )
        lines = [
            "[rig]",
            f'broker = "{broker}"',
            f'site = "{SITE}"',
            f'table = "{table}"',
            f'shoe = "{shoe.rig_link}"',
            f'console = "{console.rig_link}"',
            f'sensors = "{sensors}"',
            "timeout_scale = 2.0",
        ]
        if commands:
            # TOML basic strings are JSON strings.
            lines.append(f"restart_command = {json.dumps(pc.command('TERM'))}")
            lines.append(f"kill_command = {json.dumps(pc.command('KILL'))}")
        rig_toml = tmp_path / "rig.toml"
        rig_toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            yield Bench(pc, table, rig_toml, shoe)
        finally:
            pc.close()
    finally:
        for cable in (shoe, console):
            await cable.pull()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "key", list(GROUPS), ids=[f"{k[0]}-{k[1]}decks-{len(GROUPS[k])}" for k in GROUPS]
)
async def test_every_shipped_scenario_on_a_table_pc(
    key: tuple[Any, ...], tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    async with bench(tmp_path, mosquitto.url, key) as b:
        run = await run_external(load_rig(b.rig_toml), GROUPS[key])
        log = b.pc.log_tail()
    report = "\n".join(format_result(r) for r in run.results)
    for result in run.results:
        if result.verdict == "SKIP":
            # Only what an external run cannot do: the broker is the table's.
            assert "broker" in result.results[0].detail, report
            continue
        assert result.passed, f"{report}\n--- controller log:\n{log}"
    root = ET.fromstring(junit_xml(run.results))
    skipped = [s.get("name") or "" for s in root.findall("testsuite") if s.get("skipped") != "0"]
    could_not = [r.name for r in run.results if r.verdict == "SKIP"]
    assert sorted(skipped) == sorted(could_not), "a scenario that could run was skipped"
    assert run.status is not None
    assert run.status["rules"] == key[0]


async def test_a_pulled_cable_is_device_offline_and_back_device_online(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    def shoe_alert(code: str) -> Callable[[Observer], bool]:
        return lambda o: any(
            a["code"] == code and a["message"].startswith("shoe") for a in o.of("alerts")
        )

    def count(code: str) -> Callable[[Observer], int]:
        # Alerts raised: a DEVICE_OFFLINE resolved by DEVICE_ONLINE is published again
        # (with ``resolved_by``) under the same code, and is not a second one.
        return lambda o: sum(
            a["code"] == code and a["message"].startswith("shoe") and a["resolved_by"] is None
            for a in o.of("alerts")
        )

    async with (
        bench(tmp_path, mosquitto.url, commands=False) as b,
        ExternalTable(load_rig(b.rig_toml)) as rig,
    ):
        await rig.wait_online()
        # The rig's end of the shoe's cable closed: the table hears nothing more.
        await rig.unplug("shoe")
        await rig.session.wait(shoe_alert("DEVICE_OFFLINE"), 15)
        await rig.replug("shoe")
        await rig.session.wait(shoe_alert("DEVICE_ONLINE"), 15)
        await rig.wait_online()
        # The whole cable pulled (both ends vanish, as an adapter unplugged) and put back
        # under the same names: both sides open their ends again.
        await b.shoe.pull()
        await rig.session.wait(lambda o: count("DEVICE_OFFLINE")(o) == 2, 15)
        await b.shoe.plug()
        await rig.session.wait(lambda o: count("DEVICE_ONLINE")(o) == 2, 30)
        status = await rig.wait_online()
    assert status["devices"]["shoe"]["state"] == "ok"


async def test_without_a_restart_command_a_restart_is_skipped_not_passed(
    tmp_path: Path, mosquitto: MosquittoBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = {p.stem: p for p in shipped_scenarios()}
    files = [shipped["controller_restart_mid_round"], shipped["h1_burn_new_shoe_and_new_dealer"]]
    out = tmp_path / "report.xml"
    async with bench(tmp_path, mosquitto.url, commands=False) as b:
        argv = ["scenario", "run", "--external", str(b.rig_toml), *map(str, files)]
        rc = await asyncio.to_thread(main, [*argv, "--junit", str(out)])
    stdout = capsys.readouterr().out
    assert rc == 0, stdout
    assert "SKIP  controller_restart_mid_round" in stdout
    assert "rig.toml names no restart_command" in stdout
    assert "1 of 2 scenarios passed, 1 skipped" in stdout
    # The one-page summary: the table as its status and the shoe's HELLO describe it.
    assert f"table {b.table} at {SITE}" in stdout
    assert "controller version" in stdout
    assert "shoe HELLO: serial SIM-SHOE-0001, firmware 1.0.0" in stdout
    assert "card to card event:" in stdout
    root = ET.parse(out).getroot()
    assert root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    cases = suites["controller_restart_mid_round"].findall("testcase")
    [skipped] = [c for c in cases if c.find("skipped") is not None]
    assert "restart" in (skipped.get("name") or "")
    assert skipped.find("failure") is None
    # Each action step's time from the rig's write to the message it caused.
    h1 = suites["h1_burn_new_shoe_and_new_dealer"]
    names = [p.get("name") or "" for p in h1.iter("property")]
    assert any(n.startswith("latency ms step") and n.endswith("-> card") for n in names)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            '[rig]\nbroker = "mqtt://h"\nsite = "s"\ntable = "t"\nshoe = "/dev/x"\n'
            'console = "/dev/y"\nsensors = "0.0.0.0:7003"\nbaud = 9600\n',
            "rig.baud: unknown key",
        ),
        (
            '[rig]\nbroker = "http://h"\nsite = "s"\ntable = "t"\nshoe = "/dev/x"\n'
            'console = "/dev/y"\nsensors = "0.0.0.0:7003"\n',
            "rig.broker",
        ),
        (
            '[rig]\nbroker = "mqtt://h"\nsite = "s"\ntable = "t"\nshoe = "/dev/x"\n'
            'console = "/dev/y"\nsensors = "7003"\n',
            "rig.sensors: HOST:PORT",
        ),
        (
            '[rig]\nbroker = "mqtt://h"\nsite = "s"\ntable = "t"\nshoe = "/dev/x"\n'
            'sensors = "0.0.0.0:7003"\n',
            "rig.console: Field required",
        ),
        (
            '[rig]\nbroker = "mqtt://h"\nsite = "s"\ntable = "t"\nshoe = "/dev/x"\n'
            'console = "/dev/y"\nsensors = "0.0.0.0:7003"\ntimeout_scale = 0\n',
            "rig.timeout_scale",
        ),
        ("[table]\n", "rig: Field required"),
    ],
    ids=["unknown-key", "bad-broker", "bad-sensors", "missing-console", "zero-scale", "no-rig"],
)
def test_a_bad_rig_file_names_the_key(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "rig.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RigConfigError) as caught:
        load_rig(path)
    assert str(path) in str(caught.value)
    assert says in str(caught.value)


@pytest.mark.parametrize("broken", ["broker", "shoe line"])
def test_a_bench_that_is_not_right_is_reported_with_every_scenario(
    tmp_path: Path, mosquitto: MosquittoBroker, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    """A broker nobody answers at, or a rig line that does not open: each scenario is an
    error naming what failed, the summary and the JUnit file are written, status 1; no
    traceback (these are a bench's first mistakes)."""
    broker = f"mqtt://127.0.0.1:{free_port()}" if broken == "broker" else mosquitto.url
    rig = tmp_path / "rig.toml"
    rig.write_text(
        f'[rig]\nbroker = "{broker}"\nsite = "{SITE}"\ntable = "war-07"\n'
        f'shoe = "{tmp_path / "no-such-line"}"\nconsole = "{tmp_path / "no-such-line"}"\n'
        f'sensors = "127.0.0.1:{free_port()}"\ntimeout_scale = 0.05\n',
        encoding="utf-8",
    )
    junit = tmp_path / "bench.xml"
    scenarios = [str(p) for p in shipped_scenarios()[:2]]
    argv = ["scenario", "run", "--external", str(rig), *scenarios, "--junit", str(junit)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    cases = ET.parse(junit).getroot().iter("testcase")
    errors = [case.find("error") for case in cases]
    assert len(errors) == 2
    assert all(e is not None for e in errors)
    said = "127.0.0.1" if broken == "broker" else "no-such-line"
    assert said in out
