"""``table-controller sim shoe`` and ``sim console`` as separate processes, driven by stdin."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from drivers.console import ButtonPressed, ConsoleAction, ConsoleClient
from drivers.lineframe.cards import Card
from drivers.shoe import (
    CardDrawn,
    CardMisread,
    ShoeClient,
    ShoeCondition,
    ShoeEvent,
    ShoeOffline,
    ShoeOnline,
    ShoeState,
)
from table_controller.cli import main

STEP_BOUND_S = 15.0


class SimProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def line(self) -> str:
        assert self.proc.stdout is not None
        async with asyncio.timeout(STEP_BOUND_S):
            raw = await self.proc.stdout.readline()
        assert raw, "the simulator process ended"
        return raw.decode().strip()

    async def line_matching(self, text: str) -> str:
        while (line := await self.line()) != text:
            pass
        return line

    def say(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")


async def start(*args: str) -> AsyncIterator[SimProcess]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "table_controller.cli",
        "sim",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        yield SimProcess(proc)
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.communicate()


@pytest.fixture
async def shoe_process() -> AsyncIterator[SimProcess]:
    async for sim in start("shoe", "--listen", "127.0.0.1:0", "--heartbeat", "0.05", "--seed", "1"):
        yield sim


@pytest.fixture
async def console_process() -> AsyncIterator[SimProcess]:
    async for sim in start("console", "--pty", "--heartbeat", "0.05"):
        yield sim


async def test_sim_shoe_serves_a_shoe_driven_from_stdin(shoe_process: SimProcess) -> None:
    url = await shoe_process.line()
    assert url.startswith("socket://127.0.0.1:")
    async with ShoeClient(url) as shoe:
        async with asyncio.timeout(STEP_BOUND_S):
            while not isinstance(await anext(shoe), ShoeOnline):
                pass
            shoe_process.say("draw AS")
            assert await shoe_process.line() == "read 1 AS CARD"
            shoe_process.say("misread")
            shoe_process.say("door")
            got: list[ShoeEvent] = []
            while len(got) < 3:
                event = await anext(shoe)
                if isinstance(event, CardDrawn | CardMisread) or event == ShoeState(
                    ShoeCondition.DOOR_OPEN
                ):
                    got.append(event)
    assert got == [
        CardDrawn(1, Card.parse("AS")),
        CardMisread(2),
        ShoeState(ShoeCondition.DOOR_OPEN),
    ]
    shoe_process.say("quit")
    async with asyncio.timeout(STEP_BOUND_S):
        assert await shoe_process.proc.wait() == 0


async def test_sim_console_prints_the_answers_it_gets(console_process: SimProcess) -> None:
    path = await console_process.line()
    async with ConsoleClient(path) as console:
        console_process.say("press war 2")
        assert await console_process.line() == "pressed 1"
        async with asyncio.timeout(STEP_BOUND_S):
            while not isinstance(event := await anext(console), ButtonPressed):
                pass
        assert event == ButtonPressed(1, ConsoleAction.WAR, "2")
        await console.nak(1, "NO_WAR_WAGER")
        await console_process.line_matching("NAK,1,NO_WAR_WAGER")
        await console.show("hello, dealer")
        await console_process.line_matching("SHOW,hello, dealer")


def test_sim_sensors_is_handed_to_the_sensor_simulator(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sim", "sensors", "--help"])
    assert exit_.value.code == 0
    assert "table-controller sim sensors" in capsys.readouterr().out


def test_sim_rejects_an_unknown_device(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sim", "roulette"])
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


async def lines_until(sim: SimProcess, last: str) -> list[str]:
    """Lines printed up to and including the first that starts with ``last``."""
    lines = [await sim.line()]
    while not lines[-1].startswith(last):
        lines.append(await sim.line())
    return lines


async def test_console_help_lists_every_action_with_its_arguments(
    console_process: SimProcess,
) -> None:
    # Issue 18: `help` printed as an `error` line, and listed no action.
    await console_process.line()  # the pty path
    console_process.say("help")
    shown = await lines_until(console_process, "quit")
    assert not any(line.startswith("error") for line in shown)
    listed = {line.strip() for line in shown}
    for action in ConsoleAction:
        usage = action.value if action.arg_name is None else f"{action.value} {action.arg_name}"
        assert usage in listed, f"{usage} missing from help"
    assert {"SKIP POSITION", "WAR POSITION", "DEALER DEALER_ID", "CARD CARD"} <= listed


async def test_console_refusals_say_what_would_do(console_process: SimProcess) -> None:
    await console_process.line()
    console_process.say("press dance")
    line = await console_process.line()
    assert line.startswith("error no action 'dance': the actions are SHUFFLED, DEALER DEALER_ID")
    console_process.say("press war")
    assert await console_process.line() == "error usage: press WAR POSITION"
    console_process.say("juggle")
    assert await console_process.line() == "error unknown command 'juggle'; 'help' lists them"


async def test_shoe_unplug_stays_unplugged_until_replug(shoe_process: SimProcess) -> None:
    # Issue 18: `unplug` used to be back 55 ms later, and there was no `replug`.
    url = await shoe_process.line()
    host, port = url.removeprefix("socket://").rsplit(":", 1)
    async with ShoeClient(url, backoff_cap_s=0.1) as shoe:
        async with asyncio.timeout(STEP_BOUND_S):
            while not isinstance(await anext(shoe), ShoeOnline):
                pass
        shoe_process.say("unplug")
        assert await shoe_process.line() == "unplugged"
        async with asyncio.timeout(STEP_BOUND_S):
            while not isinstance(await anext(shoe), ShoeOffline):
                pass
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection(host, int(port))  # nothing is there to plug into
        shoe_process.say("replug")
        assert await shoe_process.line() == f"replugged at {url}"
        async with asyncio.timeout(STEP_BOUND_S):
            while not isinstance(await anext(shoe), ShoeOnline):
                pass
        shoe_process.say("draw KD")
        assert await shoe_process.line() == "read 1 KD CARD"


async def test_shoe_help_is_an_answer(shoe_process: SimProcess) -> None:
    await shoe_process.line()
    shoe_process.say("help")
    shown = await lines_until(shoe_process, "quit")
    assert shown[0] == "commands:"
    assert any(line.strip().startswith("replug") for line in shown)
    assert not any(line.startswith("error") for line in shown)
