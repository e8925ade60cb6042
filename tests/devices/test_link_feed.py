"""A line client's ``feed``: each event handed to the consumer as its bytes are read.

Against the simulated shoe over a real pty and over ``socket://`` (ports the
event loop reads: the sink is called in the very callback that read the
bytes), and over ``alt://``'s VTIME class (a port read on a thread: the sink
is called in the link's task): what reaches the sink, where, and how ``feed``
ends (the client closed, the sink failing, a URL no handler understands).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import pytest

from drivers.shoe import CardDrawn, ShoeClient, ShoeEvent, ShoeOnline
from simulators.shoe import ShoeSimulator

STEP_BOUND_S = 10.0


@pytest.fixture(params=["pty", "socket", "thread"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[ShoeSimulator, str]]:
    async with ShoeSimulator(seed=7, heartbeat_s=0.05) as sim:
        if request.param == "socket":
            url = await sim.serve_tcp()
        else:
            url = await sim.serve_pty()
            if request.param == "thread":
                url = f"alt://{url}?class=VTIMESerial"
        yield sim, url


class Sink:
    """Keeps what it is handed, with the task it was handed in; wakes a waiter."""

    def __init__(self) -> None:
        self.events: list[ShoeEvent] = []
        self.tasks: set[str | None] = set()
        """The tasks the sink was called in (None: a callback of the loop, in no task)."""
        self._changed = asyncio.Event()

    def __call__(self, event: ShoeEvent) -> None:
        task = asyncio.current_task()
        self.tasks.add(None if task is None else task.get_name())
        self.events.append(event)
        self._changed.set()

    async def until(self, want: Callable[[list[ShoeEvent]], bool]) -> None:
        async with asyncio.timeout(STEP_BOUND_S):
            while not want(self.events):
                self._changed.clear()
                await self._changed.wait()


def _reads(events: list[ShoeEvent]) -> list[CardDrawn]:
    return [e for e in events if isinstance(e, CardDrawn)]


async def test_events_reach_the_sink_in_order_with_no_hand_over(
    served: tuple[ShoeSimulator, str],
) -> None:
    sim, url = served
    sink = Sink()
    async with ShoeClient(url) as shoe:
        feeding = asyncio.create_task(shoe.feed(sink), name="consumer")
        await sink.until(lambda seen: any(isinstance(e, ShoeOnline) for e in seen))
        drawn = [sim.draw() for _ in range(3)]
        await sink.until(lambda seen: len(_reads(seen)) == 3)
        assert [(e.n, e.card) for e in _reads(sink.events)] == [(r.n, r.card) for r in drawn]
        # No hand-over to the consumer's task: the loop's callback that read the bytes
        # calls the sink, or, for a port read on a thread, the link's task.
        in_loop = not url.startswith("alt://")
        assert sink.tasks == ({None} if in_loop else {f"shoe-link {url}"})
    async with asyncio.timeout(STEP_BOUND_S):
        await feeding  # closing the client ends feed


async def test_what_the_sink_raises_closes_the_client_and_is_raised_by_feed(
    served: tuple[ShoeSimulator, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The consumer's error is the consumer's: raised by feed, not logged as the link's."""
    sim, url = served

    def sink(event: ShoeEvent) -> None:
        if isinstance(event, CardDrawn):
            raise RuntimeError(f"cannot take read {event.n}")

    async with ShoeClient(url) as shoe:
        feeding = asyncio.create_task(shoe.feed(sink))
        sim.draw()
        with pytest.raises(RuntimeError, match="cannot take read 1"):
            async with asyncio.timeout(STEP_BOUND_S):
                await feeding
        assert not shoe._link.running
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_client_reopened_feeds_its_new_consumer(
    served: tuple[ShoeSimulator, str],
) -> None:
    """The first consumer, ending after the close, takes neither the reopened link's
    queue nor its sink."""
    sim, url = served
    first, second = Sink(), Sink()
    shoe = ShoeClient(url)
    await shoe.open()
    try:
        feeding_first = asyncio.create_task(shoe.feed(first))
        await first.until(lambda seen: any(isinstance(e, ShoeOnline) for e in seen))
        await shoe.close()
        await shoe.open()
        feeding_second = asyncio.create_task(shoe.feed(second))
        async with asyncio.timeout(STEP_BOUND_S):
            await feeding_first
        drawn = [sim.draw() for _ in range(2)]
        await second.until(lambda seen: len(_reads(seen)) == 2)
        assert [e.n for e in _reads(second.events)] == [r.n for r in drawn]
        assert _reads(first.events) == []
    finally:
        await shoe.close()
    async with asyncio.timeout(STEP_BOUND_S):
        await feeding_second


async def test_feed_raises_the_error_of_a_link_that_cannot_go_on() -> None:
    sink = Sink()
    async with ShoeClient("nosuchscheme://127.0.0.1:1") as shoe:
        with pytest.raises(ValueError, match="nosuchscheme"):
            async with asyncio.timeout(STEP_BOUND_S):
                await shoe.feed(sink)
    assert sink.events == []
