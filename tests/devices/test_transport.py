"""SerialTransport's own edges: what it leaves behind when the far end resets the link."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import struct
import warnings

import pytest
import serial

from drivers.errors import TransportError
from drivers.transport import MAX_INFLIGHT_CHUNKS, SerialTransport

STEP_BOUND_S = 10.0


async def test_a_reset_connection_leaves_no_socket_for_the_garbage_collector() -> None:
    # pyserial's socket:// close skips closing the socket when shutdown fails on a reset
    # connection; the descriptor then lingered until collected (a ResourceWarning).
    accepted = asyncio.Event()

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)  # the port is open: reset it now, not while it opens
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.write(b"$STATUS,0,OK*")
        writer.close()  # with linger 0: a reset, not an orderly close
        accepted.set()

    server = await asyncio.start_server(reset, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            transport = SerialTransport(f"socket://127.0.0.1:{port}")
            await transport.open()
            transport.write(b"$INFO*09\r\n")
            async with asyncio.timeout(STEP_BOUND_S):
                await accepted.wait()
                failure: TransportError | None = None
                while failure is None:
                    try:
                        await transport.read()
                    except TransportError as exc:
                        failure = exc
            assert "reset" in str(failure)
            await transport.close()
            del transport
            gc.collect()
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    finally:
        server.close()
        await server.wait_closed()


async def test_close_passes_on_a_cancel_that_comes_as_the_port_thread_ends() -> None:
    """A task cancelled while it closes a transport ends cancelled, even when the port's
    thread finishes in the same turn of the loop (a shutdown while a device goes away)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        transport = SerialTransport(f"socket://127.0.0.1:{port}")
        await transport.open()
        closing = asyncio.create_task(transport.close())
        await asyncio.sleep(0)  # close() now waits for the port thread
        assert not closing.done()
        # The thread's end and the cancel land together.
        closed = transport._closed
        assert closed is not None
        if not closed.done():
            closed.set_result(None)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        await transport.close()
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


WAKE_BOUND_S = 2.0
"""Well under CLOSE_TIMEOUT_S: a close that had to wait for a read to time out, or for
close()'s own bound, takes longer."""


async def _idle_then_close(url: str, *, in_loop: bool) -> None:
    """Open ``url`` and see how it is read while idle: by the event loop, watching the
    port's descriptor (``in_loop``), or by its thread waiting without a timeout (an idle
    port never wakes to look); then close it: the wait ends at once."""
    transport = SerialTransport(url)
    await transport.open()
    port, thread = transport._port, transport._thread
    assert port is not None
    assert thread is not None
    fd = transport._reading
    if in_loop:
        assert fd is not None
        assert port.timeout == 0
    else:
        assert fd is None
        assert port.timeout is None
    async with asyncio.timeout(WAKE_BOUND_S):
        await transport.close()
    if fd is not None:
        # The loop no longer watches the descriptor (remove_reader: False, none was).
        assert not asyncio.get_running_loop().remove_reader(fd)
    assert not thread.is_alive()


async def test_an_idle_socket_port_is_read_by_the_event_loop() -> None:
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        url = f"socket://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        await _idle_then_close(url, in_loop=True)
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_an_idle_pty_is_read_by_the_event_loop() -> None:
    controller, device = os.openpty()
    try:
        await _idle_then_close(os.ttyname(device), in_loop=True)
    finally:
        os.close(device)
        os.close(controller)


async def test_an_idle_loop_port_is_woken_by_close() -> None:
    await _idle_then_close("loop://", in_loop=False)


async def _read_line(transport: SerialTransport) -> bytes:
    """Chunks until one ends a line (within STEP_BOUND_S)."""
    data = b""
    async with asyncio.timeout(STEP_BOUND_S):
        while not data.endswith(b"\r\n"):
            data += await transport.read()
    return data


async def test_bytes_arrive_on_a_pty_the_event_loop_reads() -> None:
    controller, device = os.openpty()
    transport = SerialTransport(os.ttyname(device))
    try:
        await transport.open()
        os.write(controller, b"$STATUS,1,OK*00\r\n")
        data = await _read_line(transport)
        assert data == b"$STATUS,1,OK*00\r\n"
    finally:
        await transport.close()
        os.close(device)
        os.close(controller)


async def test_a_stalled_consumer_pauses_the_event_loop_reading_it() -> None:
    """Read ahead by the loop, at most MAX_INFLIGHT_CHUNKS chunks wait for the consumer;
    reading goes on as they are taken, and every byte arrives, in order."""
    payload = bytes(range(256)) * 800  # 200 kB: far more than the chunks read ahead
    written, finished = asyncio.Event(), asyncio.Event()

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)  # the port is open (pyserial drops what came before)
        writer.write(payload)
        await writer.drain()
        written.set()
        await finished.wait()  # the connection stays open until the test is done
        writer.close()

    server = await asyncio.start_server(flood, "127.0.0.1", 0)
    transport = SerialTransport(f"socket://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    try:
        await transport.open()
        transport.write(b"\n")
        async with asyncio.timeout(STEP_BOUND_S):
            await written.wait()
            # Turns of the event loop, not time: each lets the loop read one chunk.
            for _ in range(10 * MAX_INFLIGHT_CHUNKS):
                if transport._reading is None:
                    break
                await asyncio.sleep(0)
            assert transport._reading is None
            assert len(transport._chunks) == MAX_INFLIGHT_CHUNKS
            data = b""
            while len(data) < len(payload):
                data += await transport.read()
        assert data == payload
    finally:
        await transport.close()
        finished.set()
        server.close()
        await server.wait_closed()


async def test_bytes_arrive_on_a_port_its_thread_reads() -> None:
    """``loop://`` has no descriptor: its thread reads it (and echoes what is written)."""
    transport = SerialTransport("loop://")
    try:
        await transport.open()
        assert transport._reading is None
        transport.write(b"$STATUS,2*00\r\n")
        data = await _read_line(transport)
        assert data == b"$STATUS,2*00\r\n"
    finally:
        await transport.close()


async def _read_for_ever(transport: SerialTransport) -> None:
    while True:
        await transport.read()


async def test_a_hung_up_pty_fails_the_link_once_and_is_not_watched_again() -> None:
    """The far side of a line goes (a pty's controller closed, as a USB adapter pulled):
    one TransportError, after which the loop watches the dead descriptor no more."""
    controller, device = os.openpty()
    transport = SerialTransport(os.ttyname(device))
    try:
        await transport.open()
        fd = transport._reading
        assert fd is not None
        os.write(controller, b"$STATUS,3,OK*00\r\n")
        data = await _read_line(transport)
        os.close(controller)
        controller = -1
        async with asyncio.timeout(STEP_BOUND_S):
            with pytest.raises(TransportError) as failed:
                await _read_for_ever(transport)
        assert data == b"$STATUS,3,OK*00\r\n"
        assert transport._reading is None
        assert not transport._chunks
        assert not asyncio.get_running_loop().remove_reader(fd)
        with pytest.raises(TransportError) as again:
            await transport.read()
        assert again.value is failed.value
    finally:
        await transport.close()
        os.close(device)
        if controller >= 0:
            os.close(controller)


def test_serial_classes_that_read_otherwise_stay_on_the_thread() -> None:
    """``alt://``'s VTIME class reads with VMIN/VTIME, not a non-blocking descriptor."""
    from drivers.transport import _loop_readable

    vtime = serial.serial_for_url("alt:///dev/null?class=VTIMESerial", do_not_open=True)
    plain = serial.serial_for_url("/dev/null", do_not_open=True)
    assert (_loop_readable(vtime), _loop_readable(plain)) == (False, True)
