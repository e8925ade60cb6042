"""The sensor-board driver (real pyusb over simusb://) against the simulated board."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

import pytest

from drivers.errors import BadDeviceUrl
from drivers.sensors import (
    BoardOffline,
    BoardOnline,
    SensorBoardClient,
    SensorEvent,
    SpotsSnapshot,
    parse_sensor_url,
)
from drivers.sensors.frames import SpotsReport, encode_report
from drivers.sensors.url import SensorUrl
from simulators.sensors import SimulatedBoard

WAIT_S = 10.0
"""Bound on any wait for an event (not a timing assertion)."""

REPLUG_BOUND_S = 5.0
"""Acceptance: BoardOnline and a fresh snapshot within 5 s of the replug."""

Layout = dict[tuple[int, int], int | None]


def bit(position: int, spot: int) -> int:
    """docs/devices.md: spot bit index = (position − 1) × 3 + spot."""
    return (position - 1) * 3 + spot


def expected_present(layout: Layout) -> int:
    return sum(1 << bit(p, s) for (p, s), cents in layout.items() if cents is not None)


def expected_values(layout: Layout) -> tuple[tuple[int, int], ...]:
    return tuple(sorted((bit(p, s), c) for (p, s), c in layout.items() if c is not None))


async def next_event(client: SensorBoardClient, bound_s: float = WAIT_S) -> SensorEvent:
    async with asyncio.timeout(bound_s):
        return await anext(client)


async def next_snapshot(client: SensorBoardClient) -> SpotsSnapshot:
    event = await next_event(client)
    assert isinstance(event, SpotsSnapshot), event
    return event


async def snapshot_where(
    client: SensorBoardClient, predicate: Callable[[SpotsSnapshot], bool]
) -> SpotsSnapshot:
    async with asyncio.timeout(WAIT_S):
        async for event in client:
            if isinstance(event, SpotsSnapshot) and predicate(event):
                return event
    raise AssertionError("the client closed before the snapshot came")


async def online_with_snapshot(client: SensorBoardClient) -> tuple[BoardOnline, SpotsSnapshot]:
    online = await next_event(client)
    assert isinstance(online, BoardOnline), online
    return online, await next_snapshot(client)


async def test_snapshot_with_rfid_values() -> None:
    async with SimulatedBoard(serial="SB-1", product="Sensors") as board:
        board.set_spots({(1, 0): 2500, (1, 1): 500, (3, 0): 1000})
        async with SensorBoardClient(board.url) as client:
            online, snapshot = await online_with_snapshot(client)
            assert online == BoardOnline(serial="SB-1", product="Sensors")
            assert client.online
            # The docs/devices.md example: position 1 initial and tie, position 3 initial.
            assert snapshot.present == 0x43
            assert snapshot.fault == 0
            assert snapshot.values == ((0, 2500), (1, 500), (6, 1000))
            assert snapshot.seq == board.seq
            assert snapshot.cents(1, 1) == 500
            assert snapshot.cents(2, 0) is None

            board.set_spot(1, 1, None)
            board.set_spot(3, 0, 2000)
            after_removal = await next_snapshot(client)
            assert after_removal.values == ((0, 2500), (6, 1000))
            changed_value = await next_snapshot(client)
            assert changed_value.present == 0x41
            assert changed_value.values == ((0, 2500), (6, 2000))


async def test_presence_only_board_has_no_values() -> None:
    async with SimulatedBoard(rfid=False) as board:
        board.set_spot(2, 0, 500)
        async with SensorBoardClient(board.url) as client:
            _, snapshot = await online_with_snapshot(client)
            assert snapshot.present == 1 << bit(2, 0)
            assert snapshot.values is None
            assert snapshot.holds_chips(2, 0)
            assert snapshot.cents(2, 0) is None
            board.set_spot(2, 2, 700)
            assert (await next_snapshot(client)).present == (1 << bit(2, 0)) | (1 << bit(2, 2))


async def test_more_than_12_occupied_spots_split_values_over_several_reports() -> None:
    layout: Layout = {(p, s): 100 * (10 * p + s) for p in range(1, 8) for s in range(3)}
    async with (
        SimulatedBoard(pad_reports=True) as board,
        SensorBoardClient(board.url) as client,
    ):
        _, empty = await online_with_snapshot(client)
        assert empty.values == ()
        sent_before = board.stats.reports_sent
        board.set_spots(layout)
        # 21 spots: VALUES of 12 and 9, then SPOTS, all of one seq.
        assert board.stats.reports_sent - sent_before == 3
        snapshot = await next_snapshot(client)
        assert len(layout) == 21
        assert snapshot.present == expected_present(layout)
        assert snapshot.values == expected_values(layout)


async def test_faults_are_reported() -> None:
    async with SimulatedBoard() as board, SensorBoardClient(board.url) as client:
        await online_with_snapshot(client)
        board.set_fault(bit(4, 2), True)
        faulty = await next_snapshot(client)
        assert faulty.fault == 1 << bit(4, 2)
        assert faulty.is_faulty(4, 2)
        board.set_fault(bit(4, 2), False)
        assert (await next_snapshot(client)).fault == 0


async def test_heartbeats_repeating_the_same_report_emit_nothing() -> None:
    async with SimulatedBoard(heartbeat_s=0.02) as board:
        board.set_spot(1, 0, 100)
        async with SensorBoardClient(board.url) as client:
            _, first = await online_with_snapshot(client)
            async with asyncio.timeout(WAIT_S):
                await board.wait_heartbeats(5)
            board.set_spot(1, 0, 200)
            # Had a heartbeat emitted anything, it would come before this change.
            second = await next_snapshot(client)
            assert second.values == ((0, 200),)
            assert second.seq == (first.seq + 1) % 256
            assert client.stats.reports >= 5 + 2


async def test_lights_reach_the_board() -> None:
    async with SimulatedBoard() as board, SensorBoardClient(board.url) as client:
        await online_with_snapshot(client)
        war_spots = (1 << bit(2, 2)) | (1 << bit(5, 2))
        assert await client.set_lights(war_spots) is True
        async with asyncio.timeout(WAIT_S):
            await board.wait_lights(war_spots)
        assert await client.set_lights(0) is True
        async with asyncio.timeout(WAIT_S):
            await board.wait_lights(0)
        assert list(board.lights_history) == [war_spots, 0]
        with pytest.raises(ValueError, match="spot bits"):
            await client.set_lights(1 << 30)


async def test_bad_reports_are_counted_and_skipped() -> None:
    async with SimulatedBoard() as board, SensorBoardClient(board.url) as client:
        await online_with_snapshot(client)
        board.inject_in(b"\x07garbage")
        board.inject_in(encode_report(SpotsReport(1, 0, 0)) + b"\x01")
        board.inject_in(b"")
        board.inject_line(b"{not json\n")
        board.set_spot(6, 1, 900)
        snapshot = await next_snapshot(client)
        assert snapshot.values == ((bit(6, 1), 900),)
        assert client.stats.bad_reports == 3
        assert client.stats.skipped_lines == 1


@pytest.mark.parametrize("rfid", [True, False], ids=["rfid", "presence"])
@pytest.mark.parametrize("seed", [20240611, 7], ids=lambda seed: f"seed={seed}")
async def test_tracks_1000_random_spot_changes(seed: int, rfid: bool) -> None:
    """Acceptance: the final state of every spot after 1,000 random changes is reported."""
    rng = random.Random(seed)
    async with SimulatedBoard(rfid=rfid) as board, SensorBoardClient(board.url) as client:
        await online_with_snapshot(client)
        layout: Layout = {}
        effective_changes = 0
        for change in range(1000):
            position, spot = rng.randint(1, 10), rng.randint(0, 2)
            cents = None if rng.random() < 0.4 else rng.randint(1, 500) * 100
            seq_before = board.seq
            board.set_spot(position, spot, cents)
            layout[(position, spot)] = cents
            effective_changes += board.seq != seq_before
            if change % 7 == 0:
                await asyncio.sleep(0)  # let the board's writes and the driver interleave
        final_seq = board.seq
        want_present = expected_present(layout)
        want_values = expected_values(layout) if rfid else None

        last: SpotsSnapshot | None = None
        snapshots = 0
        try:
            async with asyncio.timeout(30):
                while last is None or (last.seq, last.present, last.values) != (
                    final_seq,
                    want_present,
                    want_values,
                ):
                    event = await anext(client)
                    assert not isinstance(event, BoardOffline), event
                    if isinstance(event, SpotsSnapshot):
                        last = event
                        snapshots += 1
        except TimeoutError:
            pytest.fail(f"no final snapshot; last one seen: {last}")

        # Nothing was dropped on the way, so every change came as its own snapshot.
        assert board.stats.dropped_reports == 0
        assert snapshots == effective_changes

        for position in range(1, 11):
            for spot in range(3):
                want = layout.get((position, spot))
                assert last.holds_chips(position, spot) == (want is not None), (position, spot)
                if rfid:
                    assert last.cents(position, spot) == want, (position, spot)


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
