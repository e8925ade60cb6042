"""Simulators on a real serial line: ``serve_on_port`` and ``sim shoe|console --port``,
with the real drivers at the other end of a socat pty pair (issue 17, item 1)."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypeVar

import pytest

from drivers.console import ButtonPressed, ConsoleAction, ConsoleClient
from drivers.lineframe.cards import Card
from drivers.shoe import CardDrawn, ShoeClient, ShoeOffline, ShoeOnline
from simulators.console import ConsoleSimulator
from simulators.serve import LineSettingsError, serve_on_port
from simulators.shoe import ShoeSimulator
from tests.devices.socat import SocatCable

STEP_BOUND_S = 10.0
FAST_HEARTBEAT_S = 0.05

E = TypeVar("E")


@pytest.fixture
async def cable(tmp_path: Path) -> AsyncIterator[SocatCable]:
    cable = SocatCable(tmp_path)
    await cable.plug()
    try:
        yield cable
    finally:
        await cable.pull()


async def first_of(client: ShoeClient, kind: type[E]) -> E:
    async with asyncio.timeout(STEP_BOUND_S):
        async for event in client:
            if isinstance(event, kind):
                return event
    raise AssertionError(f"the client ended before a {kind.__name__}")


async def test_the_shoe_simulator_speaks_on_a_serial_line(cable: SocatCable) -> None:
    async with ShoeSimulator(seed=1, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        endpoint = await serve_on_port(sim, cable.rig_end, baudrate=115200)
        assert endpoint.connected
        assert sim.url == cable.rig_end
        async with ShoeClient(cable.table_end) as shoe:
            online = await first_of(shoe, ShoeOnline)
            assert online.serial == sim.serial
            sim.draw(Card.parse("AS"))
            sim.draw(Card.parse("TD"), drop=True)  # lost on the line: asked for again
            sim.draw(Card.parse("KH"))
            assert await first_of(shoe, CardDrawn) == CardDrawn(1, Card.parse("AS"))
            assert await first_of(shoe, CardDrawn) == CardDrawn(2, Card.parse("TD"))
            assert await first_of(shoe, CardDrawn) == CardDrawn(3, Card.parse("KH"))


async def test_the_console_simulator_speaks_on_a_serial_line_at_7e2(cable: SocatCable) -> None:
    async with ConsoleSimulator(heartbeat_s=FAST_HEARTBEAT_S) as sim:
        await serve_on_port(sim, cable.rig_end, baudrate=9600, bytesize=7, parity="E", stopbits=2)
        async with ConsoleClient(cable.table_end, baudrate=9600) as console:
            k = sim.press(ConsoleAction.WAR, 2)
            async with asyncio.timeout(STEP_BOUND_S):
                while not isinstance(event := await anext(console), ButtonPressed):
                    pass
            assert event == ButtonPressed(k, ConsoleAction.WAR, "2")
            await console.nak(k, "NO_WAR_WAGER")
            async with asyncio.timeout(STEP_BOUND_S):
                answer = await sim.answer(k)
            assert answer.body() == f"NAK,{k},NO_WAR_WAGER"


async def test_a_vanished_line_is_opened_again_when_it_comes_back(
    cable: SocatCable, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="simulators")
    async with ShoeSimulator(seed=2, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        endpoint = await serve_on_port(
            sim, str(cable.rig_link), reopen_initial_s=0.02, reopen_cap_s=0.1
        )
        async with ShoeClient(str(cable.table_link), backoff_cap_s=0.1) as shoe:
            await first_of(shoe, ShoeOnline)
            await cable.pull()
            await first_of(shoe, ShoeOffline)
            await cable.plug()
            async with asyncio.timeout(STEP_BOUND_S):
                await endpoint.wait_opens(2)
            await first_of(shoe, ShoeOnline)
            sim.draw(Card.parse("QC"))
            assert await first_of(shoe, CardDrawn) == CardDrawn(1, Card.parse("QC"))
    assert any(
        "vanished" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records
    )
    assert any("is back" in r.getMessage() for r in caplog.records)


async def test_a_line_not_there_yet_is_served_once_it_appears(tmp_path: Path) -> None:
    cable = SocatCable(tmp_path)
    async with ShoeSimulator(seed=3, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        endpoint = await serve_on_port(
            sim, str(cable.rig_link), reopen_initial_s=0.02, reopen_cap_s=0.1
        )
        assert not endpoint.connected
        try:
            await cable.plug()
            async with asyncio.timeout(STEP_BOUND_S):
                await endpoint.wait_open()
            async with ShoeClient(str(cable.table_link)) as shoe:
                await first_of(shoe, ShoeOnline)
        finally:
            await cable.pull()


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"parity": "X"}, "--parity"),
        ({"bytesize": 9}, "--bytesize"),
        ({"stopbits": 3}, "--stopbits"),
        ({"baudrate": 0}, "--baud"),
    ],
)
async def test_bad_line_settings_are_refused_naming_the_setting(
    cable: SocatCable, settings: dict[str, int | str], named: str
) -> None:
    async with ShoeSimulator(seed=4) as sim:
        with pytest.raises(LineSettingsError, match=named):
            await serve_on_port(sim, cable.rig_end, **settings)  # type: ignore[arg-type]
        assert sim.url is None


async def test_a_url_pyserial_cannot_open_is_refused() -> None:
    async with ShoeSimulator(seed=5) as sim:
        with pytest.raises(LineSettingsError, match=r"pyserial cannot open 'nosuch://x'"):
            await serve_on_port(sim, "nosuch://x")


async def run_sim(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "table_controller.cli",
        "sim",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(STEP_BOUND_S * 3):
        _, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, err.decode()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--baud", "0"), "--baud must be positive"),
        (("--parity", "X"), "argument --parity: invalid choice: 'X'"),
        (("--bytesize", "9"), "argument --bytesize: invalid choice: 9"),
        (("--stopbits", "3"), "argument --stopbits: invalid choice: 3.0"),
    ],
)
async def test_the_cli_refuses_bad_line_settings_clearly(
    cable: SocatCable, args: tuple[str, ...], message: str
) -> None:
    code, err = await run_sim("shoe", "--port", cable.rig_end, *args)
    assert code != 0
    assert message in err


async def test_sim_console_port_is_driven_from_stdin(cable: SocatCable) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "table_controller.cli",
        "sim",
        "console",
        "--port",
        cable.rig_end,
        "--baud",
        "57600",
        "--heartbeat",
        "0.05",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(STEP_BOUND_S):
            assert (await proc.stdout.readline()).decode().strip() == cable.rig_end
        async with ConsoleClient(cable.table_end, baudrate=57600) as console:
            proc.stdin.write(b"press dealer D-17\n")
            async with asyncio.timeout(STEP_BOUND_S):
                while not isinstance(event := await anext(console), ButtonPressed):
                    pass
                assert event == ButtonPressed(1, ConsoleAction.DEALER, "D-17")
                await console.ack(1)
                while (await proc.stdout.readline()).decode().strip() != "ACK,1":
                    pass
        proc.stdin.write(b"quit\n")
        async with asyncio.timeout(STEP_BOUND_S):
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.communicate()
