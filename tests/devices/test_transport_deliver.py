"""SerialTransport.deliver_to: chunks handed over in the event loop's callback that read them.

Over real ptys: what was read before the hand-over starts comes first, a hung-up
line is reported once, and a port read on a thread is left to ``read()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

import pytest

from drivers.errors import TransportError
from drivers.transport import SerialTransport

STEP_BOUND_S = 10.0


class Taken:
    """What the transport hands over, and where (None: in no task, a loop callback)."""

    def __init__(self) -> None:
        self.data = b""
        self.where: list[str | None] = []
        self.lost: list[TransportError] = []
        self.changed = asyncio.Event()

    def on_data(self, data: bytes) -> None:
        task = asyncio.current_task()
        self.where.append(None if task is None else task.get_name())
        self.data += data
        self.changed.set()

    def on_lost(self, exc: TransportError) -> None:
        self.lost.append(exc)
        self.changed.set()

    async def until(self, done: bool | None = None, *, data: bytes | None = None) -> None:
        async with asyncio.timeout(STEP_BOUND_S):
            while not ((data is not None and data in self.data) or (done and self.lost)):
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def pty() -> AsyncIterator[tuple[int, SerialTransport]]:
    """A pty's controller side, and a transport open on its device side."""
    controller, device = os.openpty()
    transport = SerialTransport(os.ttyname(device))
    try:
        await transport.open()
        yield controller, transport
    finally:
        await transport.close()
        os.close(device)
        with contextlib.suppress(OSError):  # the test may have hung it up itself
            os.close(controller)


async def test_chunks_go_to_the_callback_in_the_loop_and_what_came_before_first(
    pty: tuple[int, SerialTransport],
) -> None:
    controller, transport = pty
    os.write(controller, b"$STATUS,1,OK*00\r\n")
    first = await transport.read()  # read() until the hand-over…
    os.write(controller, b"$STATUS,2,OK*00\r\n")
    async with asyncio.timeout(STEP_BOUND_S):
        # …and one chunk read ahead, waiting for read() when the hand-over starts.
        wakeup = transport._wakeup
        assert wakeup is not None
        while not transport._chunks:
            wakeup.clear()
            await wakeup.wait()
    taken = Taken()
    assert transport.deliver_to(taken.on_data, taken.on_lost)
    assert taken.data != b""  # what was read ahead, handed over at once
    ahead = len(taken.where)
    os.write(controller, b"$STATUS,3,OK*00\r\n")
    await taken.until(data=b"$STATUS,3,OK*00\r\n")
    assert first + taken.data == b"".join(f"$STATUS,{n},OK*00\r\n".encode() for n in (1, 2, 3))
    # Read ahead: handed over in the task that called deliver_to; the rest in the
    # loop's own callback, in no task.
    assert set(taken.where[:ahead]) == {asyncio.current_task().get_name()}  # type: ignore[union-attr]
    assert set(taken.where[ahead:]) == {None}
    assert taken.lost == []


async def test_a_hung_up_line_is_reported_once_and_not_watched_again(
    pty: tuple[int, SerialTransport],
) -> None:
    controller, transport = pty
    taken = Taken()
    assert transport.deliver_to(taken.on_data, taken.on_lost)
    fd = transport._reading
    assert fd is not None
    os.close(controller)
    await taken.until(done=True)
    assert len(taken.lost) == 1
    assert transport._reading is None
    assert not asyncio.get_running_loop().remove_reader(fd)
    with pytest.raises(TransportError) as again:
        await transport.read()
    assert again.value is taken.lost[0]


async def test_a_port_read_on_its_thread_is_left_to_read() -> None:
    transport = SerialTransport("loop://")
    taken = Taken()
    try:
        await transport.open()
        assert not transport.deliver_to(taken.on_data, taken.on_lost)
        transport.write(b"$STATUS,4*00\r\n")
        data = b""
        async with asyncio.timeout(STEP_BOUND_S):
            while b"\n" not in data:
                data += await transport.read()
        assert data == b"$STATUS,4*00\r\n"
        assert taken.data == b""
    finally:
        await transport.close()
