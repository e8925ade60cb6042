"""ShoeClient against the simulated shoe over a real pty and over ``socket://``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import pytest

from drivers.lineframe.cards import Card
from drivers.shoe import (
    CardDrawn,
    CardMisread,
    CoverDrawn,
    ReadsLost,
    ReadsLostReason,
    ShoeClient,
    ShoeCondition,
    ShoeEvent,
    ShoeOffline,
    ShoeOnline,
    ShoeState,
)
from drivers.shoe.frames import MisreadFrame, ResendFrame
from simulators.shoe import ShoeFaults, ShoeSimulator, SimulatedRead

FAST_HEARTBEAT_S = 0.05
REPLUG_BOUND_S = 5.0
"""The brief's bound: a replugged device is back within 5 s."""
STEP_BOUND_S = 10.0
"""Bound on waiting for any single thing that should happen promptly."""

READ_TYPES = (CardDrawn, CardMisread, CoverDrawn)
E = TypeVar("E", bound=ShoeEvent)


async def until(
    client: ShoeClient, want: Callable[[ShoeEvent], bool], *, within: float = STEP_BOUND_S
) -> list[ShoeEvent]:
    """Events up to and including the first that ``want`` accepts."""
    seen: list[ShoeEvent] = []
    async with asyncio.timeout(within):
        async for event in client:
            seen.append(event)
            if want(event):
                return seen
    raise AssertionError(f"client ended before the event wanted; saw {seen}")


async def first(client: ShoeClient, kind: type[E], *, within: float = STEP_BOUND_S) -> E:
    event = (await until(client, lambda e: isinstance(e, kind), within=within))[-1]
    assert isinstance(event, kind)
    return event


def reads_in(events: list[ShoeEvent]) -> list[ShoeEvent]:
    return [e for e in events if isinstance(e, READ_TYPES)]


def numbers(events: list[ShoeEvent]) -> list[int]:
    return [e.n for e in events if isinstance(e, CardDrawn | CardMisread | CoverDrawn)]


def expected(*reads: SimulatedRead) -> list[ShoeEvent]:
    """What the driver should report for what the simulated shoe read."""
    out: list[ShoeEvent] = []
    for read in reads:
        if read.card is None:
            out.append(CoverDrawn(read.n))
        elif isinstance(read.frame, MisreadFrame):
            out.append(CardMisread(read.n))
        else:
            out.append(CardDrawn(read.n, read.card))
    return out


@pytest.fixture(params=["pty", "socket"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[ShoeSimulator, str]]:
    async with ShoeSimulator(seed=7, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await (sim.serve_pty() if request.param == "pty" else sim.serve_tcp())
        yield sim, url


async def test_hello_then_reads_in_order(served: tuple[ShoeSimulator, str]) -> None:
    sim, url = served
    async with ShoeClient(url) as shoe:
        online = await first(shoe, ShoeOnline)
        assert online == ShoeOnline(sim.serial, sim.firmware)
        first_read = sim.draw()
        sim.draw(Card.parse("AS"))
        sim.draw(misread=True)
        events = await until(shoe, lambda e: isinstance(e, CardMisread))
        assert reads_in(events) == [
            *expected(first_read),
            CardDrawn(2, Card.parse("AS")),
            CardMisread(3),
        ]
        assert shoe.last_n == 3


async def test_a_dropped_read_is_filled_by_resend(served: tuple[ShoeSimulator, str]) -> None:
    sim, url = served
    async with ShoeClient(url) as shoe:
        await first(shoe, ShoeOnline)
        drawn = [sim.draw(misread=False), sim.draw(drop=True), sim.draw()]
        events = await until(shoe, lambda e: isinstance(e, CardDrawn) and e.n == 3)
        assert reads_in(events) == expected(*drawn)
        assert ResendFrame(2) in sim.received


async def test_a_dropped_last_read_is_found_by_the_heartbeat(
    served: tuple[ShoeSimulator, str],
) -> None:
    sim, url = served
    async with ShoeClient(url) as shoe:
        await first(shoe, ShoeOnline)
        read = sim.draw(drop=True)
        assert [await first(shoe, CardDrawn)] == expected(read)
        assert ResendFrame(1) in sim.received


async def test_cover_card_and_door(served: tuple[ShoeSimulator, str]) -> None:
    sim, url = served
    sim.load([Card.parse("2C"), Card.parse("3D")], cover_after=1)
    async with ShoeClient(url) as shoe:
        await first(shoe, ShoeOnline)
        for _ in range(3):
            sim.draw()
        events = await until(shoe, lambda e: isinstance(e, CardDrawn) and e.n == 3)
        assert reads_in(events) == [
            CardDrawn(1, Card.parse("2C")),
            CoverDrawn(2),
            CardDrawn(3, Card.parse("3D")),
        ]
        sim.set_state(ShoeCondition.DOOR_OPEN)
        assert await first(shoe, ShoeState) == ShoeState(ShoeCondition.DOOR_OPEN)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [20240611, 7])
async def test_whole_six_deck_shoe_over_socket_with_noise_and_drops(seed: int) -> None:
    """Acceptance: 312 cards and the cover card, 5 % noise and 2 % dropped reads,
    every card exactly once, in order."""
    faults = ShoeFaults(garbage=0.05, drop=0.02)
    async with ShoeSimulator(
        decks=6, seed=seed, heartbeat_s=FAST_HEARTBEAT_S, faults=faults
    ) as sim:
        url = await sim.serve_tcp()
        assert url.startswith("socket://127.0.0.1:")
        expected = sim.order
        assert len(expected) == 313
        reads: list[ShoeEvent] = []
        others: list[ShoeEvent] = []
        async with ShoeClient(url) as shoe:
            await first(shoe, ShoeOnline)
            async with asyncio.timeout(60):
                while len(reads) < len(expected):
                    # A dealer draws a card every second or so; drawing at most 16 ahead of
                    # the controller keeps a lost read inside the shoe's last 64.
                    if sim.remaining and sim.last_n - len(reads) < 16:
                        sim.draw()
                        continue
                    event = await anext(shoe)
                    (reads if isinstance(event, READ_TYPES) else others).append(event)
            # Nothing more may come for these reads: a state change is a barrier behind them.
            sim.set_state(ShoeCondition.JAM)
            tail = await until(shoe, lambda e: e == ShoeState(ShoeCondition.JAM))
        assert reads_in(tail) == []
        assert numbers(reads) == list(range(1, 314))
        got = [e.card if isinstance(e, CardDrawn) else None for e in reads]
        assert got == expected
        assert not [e for e in others if isinstance(e, ReadsLost | ShoeOffline)]
        # The faults really happened and were really survived.
        assert sim.dropped_reads > 0
        assert sim.noise_bursts > 0
        assert shoe.stats.skipped_bytes > 0
        assert any(isinstance(c, ResendFrame) for c in sim.received)


async def test_resend_that_cannot_be_filled_is_given_up() -> None:
    async with ShoeSimulator(seed=3, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_pty()
        async with ShoeClient(url) as shoe:
            await first(shoe, ShoeOnline)
            # Read 1 is lost, and 70 more are read before the controller can ask for it:
            # the shoe keeps only the last 64, so read 1 is gone for good.
            lost = sim.draw(drop=True)
            assert lost.n == 1
            later = [sim.draw() for _ in range(70)]
            events = await until(shoe, lambda e: isinstance(e, CardDrawn) and e.n == 71)
        assert [e for e in events if isinstance(e, ReadsLost)] == [
            ReadsLost(1, ReadsLostReason.RESEND_TIMEOUT, 1)
        ]
        assert reads_in(events) == expected(*later)
        assert ResendFrame(1) in sim.received


async def test_a_resend_is_given_up_at_its_own_deadline_not_at_a_later_one() -> None:
    """The link waits for the protocol's next deadline; a gap's resend brings it nearer,
    and the wait must end at it, not at the heartbeat's (a minute away here)."""
    async with ShoeSimulator(seed=3, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_pty()
        async with ShoeClient(
            url, resend_timeout_s=0.2, heartbeat_timeout_s=60.0, info_retry_s=60.0
        ) as shoe:
            await first(shoe, ShoeOnline)
            sim.draw(drop=True)
            later = [sim.draw() for _ in range(70)]  # read 1 is out of the shoe's window
            events = await until(shoe, lambda e: isinstance(e, ReadsLost), within=STEP_BOUND_S)
        assert events[-1] == ReadsLost(1, ReadsLostReason.RESEND_TIMEOUT, 1)
        assert len(later) == 70


async def test_resume_asks_only_for_reads_missed() -> None:
    async with ShoeSimulator(seed=11, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_pty()
        async with ShoeClient(url) as shoe:
            await first(shoe, ShoeOnline)
            for _ in range(5):
                sim.draw()
            await until(shoe, lambda e: isinstance(e, CardDrawn) and e.n == 5)
            journaled = shoe.last_n
        assert journaled == 5
        missed = [sim.draw() for _ in range(3)]  # while the controller is down
        before = len(sim.received)
        async with ShoeClient(url, last_n=journaled) as shoe:
            events = await until(shoe, lambda e: isinstance(e, CardDrawn) and e.n == 8)
        assert reads_in(events) == expected(*missed)
        resends = [c for c in sim.received[before:] if isinstance(c, ResendFrame)]
        assert resends == [ResendFrame(6)]


async def test_reboot_is_detected_and_the_new_count_asked_from_one() -> None:
    async with ShoeSimulator(seed=5, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_tcp()
        port = int(url.rsplit(":", 1)[1])
        async with ShoeClient(url) as shoe:
            await first(shoe, ShoeOnline)
            for _ in range(10):
                sim.draw()
            await until(shoe, lambda e: isinstance(e, CardDrawn) and e.n == 10)
            await sim.stop_serving()
            await first(shoe, ShoeOffline)
            sim.power_cycle()  # nobody hears its HELLO
            after = [sim.draw() for _ in range(3)]
            await sim.serve_tcp(port=port)
            events = await until(
                shoe, lambda e: isinstance(e, CardDrawn) and e.n == 3, within=REPLUG_BOUND_S
            )
        assert ReadsLost(11, ReadsLostReason.SHOE_REBOOTED) in events
        assert ShoeOnline(sim.serial, sim.firmware) in events
        assert reads_in(events) == expected(*after)
        assert ResendFrame(1) in sim.received


async def test_heartbeat_loss_is_offline_and_return_is_online(
    served: tuple[ShoeSimulator, str],
) -> None:
    sim, url = served
    async with ShoeClient(url) as shoe:
        await first(shoe, ShoeOnline)
        sim.hang()
        # docs/devices.md, docs/rules.md: 3 s without a heartbeat; the bound leaves room for CI.
        offline = await first(shoe, ShoeOffline, within=3.0 + STEP_BOUND_S)
        assert offline.reason == "heartbeat_timeout"
        sim.resume()
        await first(shoe, ShoeOnline, within=REPLUG_BOUND_S)


async def test_pulled_cable_recovers_within_five_seconds(
    served: tuple[ShoeSimulator, str],
) -> None:
    sim, url = served
    async with ShoeClient(url) as shoe:
        await first(shoe, ShoeOnline)
        sessions = shoe.sessions
        sim.disconnect()
        events = await until(shoe, lambda e: isinstance(e, ShoeOnline), within=REPLUG_BOUND_S)
        assert isinstance(events[0], ShoeOffline)
        assert shoe.sessions > sessions
        read = sim.draw()
        assert [await first(shoe, CardDrawn)] == expected(read)


async def test_server_stopped_and_restarted_recovers_within_five_seconds() -> None:
    async with ShoeSimulator(seed=9, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_tcp()
        port = int(url.rsplit(":", 1)[1])
        async with ShoeClient(url) as shoe:
            await first(shoe, ShoeOnline)
            await sim.stop_serving()
            offline = await first(shoe, ShoeOffline)
            assert offline.reason.startswith("link_lost")
            during = [sim.draw() for _ in range(2)]  # read while unplugged
            await sim.serve_tcp(port=port)
            events = await until(
                shoe, lambda e: isinstance(e, CardDrawn) and e.n == 2, within=REPLUG_BOUND_S
            )
        # Online before any read. Not always first: pyserial's socket:// drops what
        # came before its open() returned, so the HELLO sent on connect can be lost;
        # then a STATUS (the first state this client sees) may come before the
        # HELLO that answers INFO.
        online_at = next(i for i, e in enumerate(events) if isinstance(e, ShoeOnline))
        assert reads_in(events[:online_at]) == []
        assert reads_in(events) == expected(*during)


async def test_noisy_line_with_bad_checksums_never_delivers_twice_or_out_of_order() -> None:
    faults = ShoeFaults(garbage=0.2, bad_checksum=0.05, drop=0.05, misread=0.05)
    async with ShoeSimulator(seed=13, heartbeat_s=FAST_HEARTBEAT_S, faults=faults) as sim:
        url = await sim.serve_pty()
        async with ShoeClient(url) as shoe:
            await first(shoe, ShoeOnline)
            accounted: set[int] = set()
            delivered: list[int] = []
            async with asyncio.timeout(30):
                while len(accounted) < 120:
                    if sim.last_n < 120 and sim.last_n - len(accounted) < 8:
                        sim.draw()
                        continue
                    event = await anext(shoe)
                    if isinstance(event, CardDrawn | CardMisread | CoverDrawn):
                        delivered.append(event.n)
                        accounted.add(event.n)
                    elif isinstance(event, ReadsLost):
                        assert event.last_missing is not None
                        accounted.update(range(event.first_missing, event.last_missing + 1))
        assert delivered == sorted(set(delivered))
        assert accounted == set(range(1, 121))
        assert shoe.stats.bad_checksum > 0


async def test_a_url_that_cannot_open_reports_offline_and_keeps_trying() -> None:
    async with ShoeSimulator(heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_tcp()
        port = int(url.rsplit(":", 1)[1])
        await sim.stop_serving()
        async with ShoeClient(url, backoff_cap_s=0.5) as shoe:
            offline = await first(shoe, ShoeOffline)
            assert offline.reason.startswith("open_failed")
            await sim.serve_tcp(port=port)
            await first(shoe, ShoeOnline, within=REPLUG_BOUND_S)


async def test_client_is_reusable_after_close() -> None:
    async with ShoeSimulator(seed=1, heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_pty()
        shoe = ShoeClient(url)
        async with shoe:
            await first(shoe, ShoeOnline)
            sim.draw()
            await first(shoe, CardDrawn)
        async with shoe:
            await first(shoe, ShoeOnline)
            read = sim.draw()
            assert read.n == 2
            assert [await first(shoe, CardDrawn)] == expected(read)
        # Closed: iteration ends once what was queued is taken.
        rest = [event async for event in shoe]
        assert reads_in(rest) == []


async def test_a_url_no_handler_understands_ends_iteration_with_its_error() -> None:
    async with ShoeClient("nosuchscheme://127.0.0.1:1") as shoe:
        with pytest.raises(ValueError, match="nosuchscheme"):
            async with asyncio.timeout(STEP_BOUND_S):
                await anext(shoe)
        rest = [event async for event in shoe]
    assert rest == []
