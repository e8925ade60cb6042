"""The sensor-board driver (real pyusb over simusb://) going offline and online: unplug
and replug, a silent board, a board absent at start, and which board it takes, by
VID:PID and by the serial a sensor URL pins."""

from __future__ import annotations

import asyncio
import logging

import pytest

from drivers.errors import BadDeviceUrl
from drivers.sensors import (
    BoardOffline,
    BoardOnline,
    SensorBoardClient,
    SpotsSnapshot,
    parse_sensor_url,
)
from drivers.sensors.url import SensorUrl
from simulators.sensors import SimulatedBoard
from tests.devices.sensors_rig import (
    REPLUG_BOUND_S,
    WAIT_S,
    bit,
    next_event,
    next_snapshot,
    online_with_snapshot,
)


async def test_unplug_then_replug_recovers_within_5_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Acceptance: unplug → BoardOffline; replug → BoardOnline and a fresh snapshot in 5 s."""
    caplog.set_level(logging.INFO, logger="drivers.sensors.client")
    async with SimulatedBoard() as board:
        board.set_spot(2, 0, 1500)
        async with SensorBoardClient(board.url) as client:
            await online_with_snapshot(client)
            assert await client.set_lights(1 << bit(2, 2)) is True

            await board.unplug()
            offline = await next_event(client)
            assert isinstance(offline, BoardOffline), offline
            assert "unplugged" in offline.reason
            assert not client.online
            assert await client.set_lights(1 << bit(2, 2)) is False
            board.set_spot(3, 1, 500)  # changed while unplugged

            await board.replug()
            async with asyncio.timeout(REPLUG_BOUND_S):
                online = await anext(client)
                fresh = await anext(client)
            assert isinstance(online, BoardOnline), online
            assert isinstance(fresh, SpotsSnapshot), fresh
            assert fresh.values == ((bit(2, 0), 1500), (bit(3, 1), 500))
            # The board lost its lights with power; the driver lights them again.
            async with asyncio.timeout(WAIT_S):
                await board.wait_lights(1 << bit(2, 2))

    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    infos = [r for r in caplog.records if r.levelno == logging.INFO and "online" in r.message]
    assert len(warnings) == 1, [r.message for r in warnings]
    assert len(infos) == 2, [r.message for r in infos]


async def test_a_silent_board_goes_offline_and_comes_back() -> None:
    async with SimulatedBoard() as board:
        board.set_spot(1, 2, 300)
        async with SensorBoardClient(board.url, heartbeat_timeout_s=1.0) as client:
            _, before = await online_with_snapshot(client)
            board.mute()
            offline = await next_event(client)
            assert isinstance(offline, BoardOffline), offline
            assert "no report" in offline.reason
            board.mute(False)
            # Nothing changed, yet the driver reports the layout afresh after reconnecting.
            _, fresh = await online_with_snapshot(client)
            assert (fresh.seq, fresh.present, fresh.values) == (
                before.seq,
                1 << bit(1, 2),
                ((bit(1, 2), 300),),
            )


async def test_a_board_that_missed_a_change_sends_its_whole_state_when_it_resumes() -> None:
    async with SimulatedBoard() as board, SensorBoardClient(board.url) as client:
        await online_with_snapshot(client)
        board.mute()
        board.set_spots({(p, 0): 100 * p for p in range(1, 11)} | {(1, 1): 5})
        board.mute(False)
        snapshot = await next_snapshot(client)
        assert snapshot.seq == board.seq
        assert snapshot.values == ((0, 100), (1, 5), *((bit(p, 0), 100 * p) for p in range(2, 11)))


async def test_a_board_absent_at_start_is_offline_until_it_appears() -> None:
    async with SimulatedBoard() as board:
        await board.unplug()
        async with SensorBoardClient(board.url) as client:
            offline = await next_event(client)
            assert isinstance(offline, BoardOffline), offline
            assert "not found" in offline.reason
            await board.replug()
            await online_with_snapshot(client)


async def test_another_vid_pid_is_not_the_board() -> None:
    async with SimulatedBoard(vid=0x1209, pid=0x0002) as board:
        async with SensorBoardClient(board.url) as client:
            offline = await next_event(client)
            assert isinstance(offline, BoardOffline), offline
            assert "1209:0001 not found" in offline.reason
        async with SensorBoardClient(board.url, pid=0x0002) as client:
            await online_with_snapshot(client)


async def test_the_client_can_be_opened_again_after_closing() -> None:
    async with SimulatedBoard() as board:
        client = SensorBoardClient(board.url)
        for _ in range(2):
            async with client:
                await online_with_snapshot(client)
                with pytest.raises(RuntimeError, match="already open"):
                    await client.__aenter__()
            # Iteration ends once closed.
            assert [event async for event in client] == []
        with pytest.raises(RuntimeError, match="not open"):
            await client.set_lights(0)


def test_sensor_urls() -> None:
    assert parse_sensor_url("usb://1209:0001") == SensorUrl("usb", 0x1209, 0x0001)
    assert parse_sensor_url("usb://") == SensorUrl("usb", 0x1209, 0x0001)
    assert parse_sensor_url("usb://16c0:05DF") == SensorUrl("usb", 0x16C0, 0x05DF)
    assert parse_sensor_url("simusb://127.0.0.1:7003") == SensorUrl(
        "simusb", 0x1209, 0x0001, "127.0.0.1", 7003
    )
    assert parse_sensor_url("simusb://127.0.0.1:7003", pid=2).pid == 2
    for bad in ["usb://1209", "usb://12345:1", "usb://xyz:0001", "serial:///dev/x", "simusb://h"]:
        with pytest.raises(ValueError, match=r"usb|VID|PID|port"):
            parse_sensor_url(bad)


def test_a_sensor_url_may_pin_the_board_serial() -> None:
    # Issue 13, item 5: any gadget with the default 1209:0001 passed for the board.
    pinned = parse_sensor_url("usb://1209:0001?serial=WAR07-SB-0042")
    assert pinned == SensorUrl("usb", 0x1209, 0x0001, serial="WAR07-SB-0042")
    assert pinned.serial_pinned
    assert pinned.matches("WAR07-SB-0042")
    assert not pinned.matches("GADGET-1")
    assert not pinned.matches(None)
    unpinned = parse_sensor_url("usb://1209:0001")
    assert not unpinned.serial_pinned
    assert unpinned.matches("GADGET-1")
    sim = parse_sensor_url("simusb://127.0.0.1:7003?serial=SIM-1")
    assert (sim.host, sim.port, sim.serial) == ("127.0.0.1", 7003, "SIM-1")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("usb://1209:0001?serial=", "non-empty serial"),
        ("usb://1209:0001?serial=A&serial=B", "one non-empty serial"),
        ("usb://1209:0001?vendor=x", "unknown option 'vendor'"),
        ("usb://1209:0001?serial", "expected \\?serial=SERIAL"),
    ],
)
def test_a_bad_serial_option_is_named(url: str, why: str) -> None:
    with pytest.raises(BadDeviceUrl, match=why):
        parse_sensor_url(url)


async def test_a_board_with_another_serial_is_not_taken() -> None:
    async with (
        SimulatedBoard(serial="GADGET-1") as board,
        SensorBoardClient(f"{board.url}?serial=WAR07-SB-0042") as client,
    ):
        assert client.serial_pinned
        offline = await next_event(client)
        assert isinstance(offline, BoardOffline), offline
        assert "with serial 'WAR07-SB-0042' not found (found serial 'GADGET-1')" in (offline.reason)
        assert client.serial is None
        assert not client.online


async def test_the_board_with_the_pinned_serial_is_taken_and_its_serial_known() -> None:
    async with SimulatedBoard(serial="WAR07-SB-0042") as board:
        async with SensorBoardClient(f"{board.url}?serial=WAR07-SB-0042") as client:
            online, _ = await online_with_snapshot(client)
            assert online.serial == "WAR07-SB-0042"
            assert client.serial == "WAR07-SB-0042"
            assert client.serial_pinned
        async with SensorBoardClient(board.url) as client:
            await online_with_snapshot(client)
            assert not client.serial_pinned  # taken, but the table should warn
            assert client.serial == "WAR07-SB-0042"
