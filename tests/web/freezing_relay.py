"""A TCP relay in front of the pit whose ``freeze()`` silences the ``/api/live`` streams
open at that moment (no FIN, no RST: a roaming tablet's link), while every other
connection, a new stream's included, flows."""

from __future__ import annotations

import asyncio
import contextlib


class FreezingRelay:
    def __init__(self, port: int) -> None:
        self.upstream = port
        self._streams: list[asyncio.Event] = []
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def freeze(self) -> None:
        for flowing in self._streams:
            flowing.clear()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for flowing in self._streams:
            flowing.set()
        for writer in self._writers:
            writer.transport.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        self._writers += [writer, up_writer]
        flowing = asyncio.Event()
        flowing.set()

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    if source is reader and data.startswith(b"GET /api/live"):
                        self._streams.append(flowing)
                    await flowing.wait()
                    sink.write(data)
                    await sink.drain()
            sink.transport.abort()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._tasks.discard(task)
