"""A byte link to a serial device on any pyserial URL, for asyncio.

Opened with ``serial.serial_for_url(url)``, so a device path (``/dev/ttyUSB0``,
115200 8N1 by default), a pty path, ``socket://host:port``, ``rfc2217://…`` and
``spy://…`` all work the same (docs/devices.md: the shoe and the console are opened
"by any pyserial URL").

Why a thread: pyserial's URL handlers do not all read through a descriptor an
asyncio reader could watch (``rfc2217://`` runs its own thread, ``loop://`` is a
queue), but every one of them implements a blocking ``read()``. So one thread per
device opens the port (a TCP connect or a slow USB adapter never blocks the event
loop) and closes it. The plain POSIX serial port (a device path, a pty, as
``spy://`` and ``hwgrep://`` open it too) and ``socket://`` are then read by the
event loop itself (``add_reader``, a read that takes what has arrived): a byte
that arrives wakes the loop, not a thread that would hand it over, and the thread
only waits to close the port. Such a port can hand each chunk straight to a
callback (``deliver_to``) in the loop's callback that read it, with no task
switch to a reader; the line links do so. Any other port is read by its thread,
which hands each chunk to the loop with ``call_soon_threadsafe``; where
``close()`` can end that wait (``cancel_read``: ``loop://``, ``alt://``'s
classes) the read has no timeout, so an idle port costs no CPU, and other
handlers read with a short timeout and look for a close request between reads.

Writes are small frames (at most 96 bytes) written from the loop thread under a
lock, as pyserial's own ``serial.threaded`` does; a write timeout bounds them,
and the lock keeps a write from touching a port the thread lets go of. At most
``MAX_INFLIGHT_CHUNKS`` chunks are read ahead of the consumer, so a stalled
consumer pauses reading instead of growing memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import serial
from serial.urlhandler import protocol_hwgrep, protocol_socket, protocol_spy

from drivers.errors import TransportError
from drivers.lifecycle import AsyncResource

TRACE = 5
"""Log level of raw bytes, below DEBUG: raw bytes are logged only at a trace level."""
logging.addLevelName(TRACE, "TRACE")

DEFAULT_BAUDRATE = 115200
READ_POLL_S = 0.05
"""How long a read waits, on a port ``close()`` cannot wake, before the thread checks
whether it is to stop; and how long a thread waits for the consumer between checks."""
WRITE_TIMEOUT_S = 1.0
READ_CHUNK_BYTES = 4096
MAX_INFLIGHT_CHUNKS = 16
CLOSE_TIMEOUT_S = 10.0
"""Bound on waiting for the port thread to finish (an in-progress TCP connect can take
pyserial's 5 s connect timeout)."""


def _set_result(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _set_exception(fut: asyncio.Future[None], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


def _loop_readable(port: Any) -> bool:
    """``port`` (not yet open) will be read through a non-blocking descriptor the event
    loop can watch: the plain POSIX serial port (a device path, a pty), as ``spy://`` and
    ``hwgrep://`` open it, and ``socket://``. Not its variants that read otherwise
    (``alt://``'s VTIME and poll classes): those stay on the thread."""
    loop_read = {protocol_socket.Serial, protocol_spy.Serial, protocol_hwgrep.Serial}
    if os.name == "posix":
        loop_read.add(serial.Serial)
    return type(port) in loop_read


def _descriptor(port: Any) -> int:
    """The open ``port``'s descriptor (a device's, or ``socket://``'s socket's)."""
    sock = getattr(port, "_socket", None)
    return sock.fileno() if isinstance(sock, socket.socket) else int(port.fd)


def _waker(port: Any) -> Callable[[], None] | None:
    """What ends a read waiting on ``port`` from another thread, if anything does
    (``cancel_read``: ``loop://``, and the serial ports left on the thread)."""
    cancel = getattr(port, "cancel_read", None)
    return cancel if callable(cancel) else None


def _close_port(port: Any) -> None:
    """Close a pyserial port, and its socket for ``socket://``: pyserial's close skips the
    socket's own close when shutting a reset connection down fails, leaving the
    descriptor to the garbage collector."""
    sock = getattr(port, "_socket", None)
    with contextlib.suppress(Exception):
        port.close()
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.close()


class SerialTransport(AsyncResource):
    """An open-once byte link on a pyserial URL; a new object for each connection.

    ``await open()`` (or ``async with``), then ``await read()`` for each chunk and
    ``write()`` for frames; ``await close()`` stops the thread and closes the port.
    ``read()`` and ``write()`` raise :class:`TransportError` once the link is lost.
    """

    def __init__(
        self,
        url: str,
        *,
        baudrate: int = DEFAULT_BAUDRATE,
        logger: logging.Logger | None = None,
        **serial_options: Any,
    ) -> None:
        self.url = url
        self._options: dict[str, Any] = {
            "baudrate": baudrate,
            "timeout": READ_POLL_S,
            "write_timeout": WRITE_TIMEOUT_S,
            **serial_options,
        }
        self._log = logger or logging.getLogger(__name__)
        self._port: Any = None
        self._waker: Callable[[], None] | None = None
        # Read by the event loop (a port with a descriptor): its descriptor while watched.
        self._in_loop = False
        self._reading: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._credit = threading.Semaphore(MAX_INFLIGHT_CHUNKS)
        self._thread: threading.Thread | None = None
        self._chunks: deque[bytes | BaseException] = deque()
        self._wakeup: asyncio.Event | None = None
        self._closed: asyncio.Future[None] | None = None
        self._failure: TransportError | None = None
        # Set by deliver_to: each chunk read in the loop goes to it, not to read().
        self._on_data: Callable[[bytes], None] | None = None
        self._on_lost: Callable[[TransportError], None] | None = None

    async def open(self) -> None:
        """Open the port on its thread; TransportError if it cannot be opened now.

        A URL pyserial does not understand raises ValueError: no retry mends that.
        """
        if self._thread is not None:
            raise RuntimeError("a SerialTransport is opened once; make a new one to reconnect")
        self._loop = loop = asyncio.get_running_loop()
        opened: asyncio.Future[None] = loop.create_future()
        self._closed = closed = loop.create_future()
        self._wakeup = asyncio.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(loop, opened, closed),
            name=f"serial-io {self.url}",
            daemon=True,
        )
        self._thread.start()
        try:
            await asyncio.shield(opened)
            if self._in_loop:
                self._resume_reading()
        except (serial.SerialException, OSError) as exc:
            await self.close()
            raise TransportError(f"cannot open {self.url}: {exc}") from exc
        except BaseException:
            await self.close()
            raise

    async def read(self) -> bytes:
        """The next chunk of bytes; TransportError once the link is lost."""
        assert self._wakeup is not None, "read() before open()"
        while not self._chunks:
            if self._failure is not None:
                raise self._failure
            if self._stop.is_set():
                raise TransportError(f"{self.url} is closed")
            self._wakeup.clear()
            await self._wakeup.wait()
        item = self._chunks.popleft()
        if isinstance(item, BaseException):
            # Kept: a link that failed is never read again.
            raise self._fail(item)
        if self._in_loop:
            self._resume_reading()
        else:
            self._credit.release()
        return item

    def deliver_to(
        self, on_data: Callable[[bytes], None], on_lost: Callable[[TransportError], None]
    ) -> bool:
        """From now on, hand each chunk to ``on_data`` in the event loop's callback that
        read it (no task switch to a reader), and the link's loss to ``on_lost``, once.

        Only for a port the event loop reads (one with a descriptor); False for the
        others, which are read with :meth:`read`. What was read before comes first.
        Neither callback may raise: the loop's callback has nobody to raise it to.
        """
        if not self._in_loop or self._on_data is not None:
            return False
        self._on_data, self._on_lost = on_data, on_lost
        while self._chunks:
            item = self._chunks.popleft()
            if isinstance(item, BaseException):
                self._fail(item)
                return True
            on_data(item)
        if self._failure is not None:
            on_lost(self._failure)
        else:
            self._resume_reading()
        return True

    def _fail(self, exc: BaseException) -> TransportError:
        """The link failed on ``exc``: the error kept for every later read, and on_lost's."""
        failure = self._failure = TransportError(f"{self.url}: {exc}")
        failure.__cause__ = exc
        if self._on_lost is not None:
            self._on_lost(failure)
        return failure

    def write(self, data: bytes) -> None:
        """Write ``data`` now; TransportError if the link is down or the write fails."""
        with self._lock:
            port = self._port
            if port is None or self._failure is not None or self._stop.is_set():
                raise TransportError(f"{self.url} is not open")
            try:
                port.write(data)
            except (serial.SerialException, OSError) as exc:
                raise TransportError(f"write to {self.url} failed: {exc}") from exc
        if self._log.isEnabledFor(TRACE):
            self._log.log(TRACE, "%s tx %r", self.url, data)

    async def close(self) -> None:
        """Stop the port thread and close the port; safe to call more than once."""
        # The loop stops watching the descriptor before the thread closes it.
        self._pause_reading()
        self._stop.set()
        if self._wakeup is not None:
            self._wakeup.set()
        if self._waker is not None:
            with self._lock:
                # Under the lock: the thread lets go of the port under it before it
                # closes it, and a wake sent after that could land on a descriptor
                # number already reused.
                if self._waker is not None:
                    with contextlib.suppress(Exception):
                        self._waker()
        thread = self._thread
        if thread is None:
            return
        if self._closed is not None and thread.is_alive():
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancel
            # that arrives as the thread finishes, and the caller's task never ends.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    await asyncio.shield(self._closed)
        thread.join(timeout=CLOSE_TIMEOUT_S)

    # -- the port thread -------------------------------------------------------------

    def _run(
        self,
        loop: asyncio.AbstractEventLoop,
        opened: asyncio.Future[None],
        closed: asyncio.Future[None],
    ) -> None:
        try:
            try:
                port = serial.serial_for_url(self.url, do_not_open=True, **self._options)
                in_loop = _loop_readable(port)
                # Set before opening: no reconfiguring of an open line.
                if in_loop:
                    # The loop reads what has arrived, never waits for more.
                    port.timeout = 0
                elif _waker(port) is not None:
                    # close() can end the wait: the read waits for bytes without a timeout.
                    port.timeout = None
                port.open()
            except BaseException as exc:  # every failure goes to open()'s caller
                self._call(loop, _set_exception, opened, exc)
                return
            with self._lock:
                self._port = port
                self._in_loop = in_loop
                self._waker = None if in_loop else _waker(port)
            self._call(loop, _set_result, opened)
            try:
                if in_loop:
                    self._stop.wait()
                else:
                    self._pump(loop, port)
            finally:
                with self._lock:
                    self._port = self._waker = None
                # Outside the lock: closing a socket:// port takes pyserial 0.3 s, and
                # a write from the loop meanwhile finds the port gone, not the lock held.
                _close_port(port)
        finally:
            self._call(loop, _set_result, closed)

    def _pump(self, loop: asyncio.AbstractEventLoop, port: Any) -> None:
        while not self._stop.is_set():
            try:
                data: bytes = port.read(1)
                if data:
                    waiting = port.in_waiting
                    while waiting and len(data) < READ_CHUNK_BYTES:
                        data += port.read(min(waiting, READ_CHUNK_BYTES - len(data)))
                        waiting = port.in_waiting
            except BaseException as exc:  # read() turns it into TransportError
                if not self._stop.is_set():
                    self._hand_over(loop, exc)
                return
            if data:
                if self._log.isEnabledFor(TRACE):
                    self._log.log(TRACE, "%s rx %r", self.url, data)
                if not self._hand_over(loop, data):
                    return

    # -- reading in the event loop -----------------------------------------------------

    def _resume_reading(self) -> None:
        """Watch the port's descriptor, unless closing, failed, or enough is read ahead."""
        port = self._port
        if (
            self._reading is not None
            or port is None
            or self._stop.is_set()
            or self._failure is not None
            or len(self._chunks) >= MAX_INFLIGHT_CHUNKS
            or (self._chunks and isinstance(self._chunks[-1], BaseException))
        ):
            return
        assert self._loop is not None
        fd = _descriptor(port)
        self._loop.add_reader(fd, self._readable, port)
        self._reading = fd

    def _pause_reading(self) -> None:
        if self._reading is not None and self._loop is not None:
            self._loop.remove_reader(self._reading)
            self._reading = None

    def _readable(self, port: Any) -> None:
        try:
            data: bytes = port.read(READ_CHUNK_BYTES)
        except Exception as exc:  # read() turns it into TransportError
            self._pause_reading()
            if self._stop.is_set():
                return
            if self._on_lost is not None:
                self._fail(exc)
            else:
                self._deliver(exc)  # for read() to raise
            return
        if data:
            if self._log.isEnabledFor(TRACE):
                self._log.log(TRACE, "%s rx %r", self.url, data)
            if self._on_data is not None:
                self._on_data(data)
                return
            self._deliver(data)
            if len(self._chunks) >= MAX_INFLIGHT_CHUNKS:
                self._pause_reading()  # until read() takes one

    # -- reading on the port thread ------------------------------------------------------

    def _hand_over(self, loop: asyncio.AbstractEventLoop, item: bytes | BaseException) -> bool:
        while not self._credit.acquire(timeout=READ_POLL_S):
            if self._stop.is_set():
                return False
        return self._call(loop, self._deliver, item)

    def _deliver(self, item: bytes | BaseException) -> None:
        self._chunks.append(item)
        if self._wakeup is not None:
            self._wakeup.set()

    @staticmethod
    def _call(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> bool:
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody is left to hand anything to
            return False
        return True
