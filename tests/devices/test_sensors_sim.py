"""The simulated board's own surface: CLI options, stdin commands, the `sim sensors` command."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import pytest

from drivers.sensors import BoardOffline, BoardOnline, SensorBoardClient, SpotsSnapshot
from simulators.sensors import (
    COMMANDS_HELP,
    SimulatedBoard,
    add_arguments,
    board_from_args,
    describe,
    run_command,
)
from simulators.stdin import obey

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 10.0


def parse(argv: list[str], parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    parser = parser or argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_options_build_the_board_they_describe() -> None:
    args = parse(
        [
            "--listen=127.0.0.1:0",
            "--vid=16c0",
            "--pid=05df",
            "--serial=SB-9",
            "--no-rfid",
            "--heartbeat-ms=50",
            "--spot=1:0:2500",
            "--spot=3:2",
        ]
    )
    board = board_from_args(args)
    assert (board.identity.vid, board.identity.pid, board.identity.serial) == (
        0x16C0,
        0x05DF,
        "SB-9",
    )
    assert not board.rfid
    assert board.heartbeat_s == 0.05
    assert board.values == ((0, 2500), (8, 100))
    assert board.seq == 1
    assert parse([]).listen == "127.0.0.1:7003"


def test_a_parser_that_already_has_listen_is_accepted() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", default="0.0.0.0:9")
    args = parse(["--serial", "X"], parser)
    assert (args.listen, args.serial) == ("0.0.0.0:9", "X")


@pytest.mark.parametrize(
    "argv",
    [["--spot=11:0"], ["--spot=1:3:5"], ["--spot=a:b"], ["--vid=12345"], ["--vid=zz"]],
    ids=["position", "spot", "words", "vid-range", "vid-hex"],
)
def test_bad_options_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(argv)
    assert "error" in capsys.readouterr().err


def test_heartbeats_must_come_at_least_every_250_ms() -> None:
    with pytest.raises(ValueError, match="heartbeat"):
        SimulatedBoard(heartbeat_s=0.3)


async def test_stdin_commands_act_on_the_board() -> None:
    async with SimulatedBoard() as board:
        assert "seq 1" in await run_command(board, ["spot", "2", "1", "500"])
        assert board.values == ((4, 500),)
        await run_command(board, ["spot", "2", "1", "-"])
        assert not board.values
        await run_command(board, ["fault", "7", "on"])
        assert board.fault == 1 << 7
        await run_command(board, ["spot", "1", "0", "100"])
        await run_command(board, ["clear"])
        assert board.present == 0
        await run_command(board, ["unplug"])
        assert not board.plugged
        assert "unplugged" in describe(board)
        await run_command(board, ["replug"])
        assert board.plugged
        await run_command(board, ["hang"])
        await run_command(board, ["resume"])
        for bad in (["dance"], ["spot", "1"], ["spot", "x", "0", "1"], ["fault", "40", "on"]):
            with pytest.raises(ValueError, match=r"unknown command|a position|spot bit"):
                await run_command(board, bad)


async def test_the_sim_sensors_command_serves_a_board_driven_from_stdin() -> None:
    """`table-controller sim sensors` end to end: URL on stdout, commands on stdin."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "table_controller.cli",
        "sim",
        "sensors",
        "--listen",
        "127.0.0.1:0",
        "--serial",
        "CLI-1",
        "--spot",
        "1:0:2500",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        async with asyncio.timeout(WAIT_S):
            url = (await process.stdout.readline()).decode().strip()
        assert url.startswith("simusb://127.0.0.1:")
        async with SensorBoardClient(url) as client, asyncio.timeout(WAIT_S):
            online = await anext(client)
            assert online == BoardOnline("CLI-1", "Bet sensor board (simulated)")
            first = await anext(client)
            assert isinstance(first, SpotsSnapshot)
            assert first.values == ((0, 2500),)

            process.stdin.write(b"spot 2 2 700\n")
            await process.stdin.drain()
            second = await anext(client)
            assert isinstance(second, SpotsSnapshot)
            assert second.values == ((0, 2500), (5, 700))

            assert await client.set_lights(1 << 5)
            while (line := (await process.stdout.readline()).decode().strip()) != "lights 0x20":
                assert line, "the simulator ended"

            process.stdin.write(b"quit\n")
            await process.stdin.drain()
            assert await process.wait() == 0
            offline = await anext(client)
            assert isinstance(offline, BoardOffline)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        process.stdin.close()
        await process.stdin.wait_closed()
        # Drain what is left so the pipe is closed by its transport.
        await process.stdout.read()


@pytest.mark.parametrize(
    ("words", "bit", "cents"),
    [
        (["spot", "1", "initial", "25.00"], 0, 2500),
        (["spot", "1", "initial", "2500"], 0, 2500),
        (["spot", "2", "tie", "5"], 4, 5),
        (["spot", "2", "TIE", "5.5"], 4, 550),
        (["spot", "3", "war", "$10.00"], 8, 1000),
        (["spot", "3", "2", "1000"], 8, 1000),
    ],
)
async def test_spots_take_names_and_amounts_in_dollars_or_cents(
    words: list[str], bit: int, cents: int
) -> None:
    # Issue 18: `spot 1 initial 2500` used to fail with "invalid literal for int()".
    async with SimulatedBoard() as board:
        await run_command(board, words)
        assert board.values == ((bit, cents),)


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (["spot", "1", "middle", "25.00"], "initial, tie or war"),
        (["spot", "1", "initial", "25.001"], "two decimals"),
        (["spot", "1", "initial", "lots"], "25.00 or cents as 2500"),
        (["spot", "1", "initial", "0"], "more than 0"),
        (["spot", "11", "initial", "1"], "position must be 1"),
        (["fault", "2", "sideways", "on"], "initial, tie or war"),
    ],
)
async def test_bad_spots_and_amounts_say_what_is_expected(words: list[str], why: str) -> None:
    async with SimulatedBoard() as board:
        with pytest.raises(ValueError, match=why):
            await run_command(board, words)


async def test_a_fault_names_its_spot() -> None:
    async with SimulatedBoard() as board:
        await run_command(board, ["fault", "2", "initial", "on"])
        assert board.fault == 1 << 3
        await run_command(board, ["fault", "2", "initial", "off"])
        assert board.fault == 0


def test_the_spot_option_takes_names_and_amounts() -> None:
    args = parse(["--spot", "1:initial:25.00", "--spot", "2:tie"])
    assert args.spot == [(1, 0, 2500), (2, 1, 100)]


async def test_help_lists_the_commands_and_is_no_error(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 18: `help` printed as an `error` line, and the spot names only under --help.
    async with SimulatedBoard() as board:

        async def act(words: list[str]) -> str:
            return await run_command(board, words)

        lines: asyncio.Queue[str | None] = asyncio.Queue()
        for line in ("help", "spot 1 initial 25.00", "dance", "quit"):
            lines.put_nowait(line)
        stop = asyncio.Event()
        await obey(act, COMMANDS_HELP, lines, stop)
        assert stop.is_set()
    out = capsys.readouterr().out.splitlines()
    assert out[: len(COMMANDS_HELP.splitlines())] == COMMANDS_HELP.splitlines()
    assert "initial (0), tie (1), war (2)" in COMMANDS_HELP
    assert out[-2].startswith("seq 1 spots P1/initial=25.00")
    assert out[-1] == "error unknown command 'dance'; 'help' lists them"
