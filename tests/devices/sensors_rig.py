"""Shared by the sensor board's tests: spot bits and layouts, waits on the driver's
events, and strategies for a report's seq number and spot masks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from hypothesis import strategies as st

from drivers.sensors import BoardOnline, SensorBoardClient, SensorEvent, SpotsSnapshot
from drivers.sensors.frames import SPOT_MASK

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


seqs = st.integers(0, 255)
masks = st.integers(0, SPOT_MASK)
