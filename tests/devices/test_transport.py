"""SerialTransport's own edges: what it leaves behind when the far end resets the link."""

from __future__ import annotations

import asyncio
import gc
import socket
import struct
import warnings

from drivers.errors import TransportError
from drivers.transport import SerialTransport

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
