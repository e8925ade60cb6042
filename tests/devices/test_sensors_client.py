"""The sensor-board driver (real pyusb over simusb://) against the simulated board: the
snapshots it reports, values split over reports, faults, heartbeats, lights and bad
reports."""

from __future__ import annotations

import asyncio
import random

import pytest

from drivers.sensors import BoardOffline, BoardOnline, SensorBoardClient, SpotsSnapshot
from drivers.sensors.frames import SpotsReport, encode_report
from simulators.sensors import SimulatedBoard
from tests.devices.sensors_rig import (
    WAIT_S,
    Layout,
    bit,
    expected_present,
    expected_values,
    next_snapshot,
    online_with_snapshot,
)


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


async def test_lights_do_not_wait_for_the_board_to_report() -> None:
    """LIGHTS go out while the worker waits in its read: a board that says nothing for a
    minute still has its war spots lit at once."""
    async with (
        SimulatedBoard() as board,
        SensorBoardClient(board.url, read_slice_ms=60_000, heartbeat_timeout_s=120) as client,
    ):
        await online_with_snapshot(client)
        board.mute()
        # The worker is (or is about to be) in a read that no report will end.
        async with asyncio.timeout(WAIT_S):
            assert await client.set_lights(1 << bit(4, 2)) is True
            await board.wait_lights(1 << bit(4, 2))
        assert client.online
        # A report ends the read, so that the client closes now, not in a minute.
        board.mute(False)


async def test_lights_asked_once_closing_has_begun_are_answered_not_left_waiting() -> None:
    """A LIGHTS asked for while the client closes is answered at once (False: not
    delivered): the worker may already have answered its last command, and would never
    take this one."""
    async with SimulatedBoard() as board:
        client = SensorBoardClient(board.url)
        await client.open()
        await online_with_snapshot(client)
        thread = client._thread
        assert thread is not None
        closing = asyncio.create_task(client.close())
        await asyncio.sleep(0)  # one turn: close() has stopped the worker and waits for it
        # The worker's last act: its DONE is posted, not yet seen by close() (the loop is
        # held here), which is when a LIGHTS asked for was left unanswered.
        thread.join(WAIT_S)
        assert not thread.is_alive()
        assert await asyncio.wait_for(client.set_lights(1 << bit(1, 2)), WAIT_S) is False
        async with asyncio.timeout(WAIT_S):
            await closing


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
