"""One TCP connection to a simulated board: one plug-in, from connect to close.

Reads, writes and control transfers may come from different threads (libusb
allows concurrent transfers); the locks keep one reader and one writer at a
time, and a close from any thread wakes both.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from drivers.errors import BadMessage
from drivers.sensors.simusb.libusb import (
    LIBUSB_ERROR_NO_DEVICE,
    LIBUSB_ERROR_TIMEOUT,
    DeviceDescriptor,
    usb_error,
)
from drivers.sensors.simusb.wire import (
    CONFIGURATION_VALUE,
    POLL_SLICE_S,
    DeviceMessage,
    LineBuffer,
    PacketMessage,
    decode_message,
    encode_message,
)

# -------------------------------------------------------------------------- session


def _slice(deadline: float | None) -> float:
    """How long the next blocking wait may be: a poll slice, less if ``deadline`` (monotonic;
    None: none) is nearer; libusb's timeout error once it has passed."""
    if deadline is None:
        return POLL_SLICE_S
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise usb_error(LIBUSB_ERROR_TIMEOUT)
    return min(POLL_SLICE_S, remaining)


@dataclass(slots=True)
class SimUsbStats:
    """What the backend skipped; counters only grow."""

    connects: int = 0
    failed_connects: int = 0
    bad_lines: int = 0
    unexpected_messages: int = 0
    overlong_lines: int = 0


class Session:
    """One TCP connection to the board: one plug-in, from connect to close."""

    def __init__(self, sock: socket.socket, address: int, stats: SimUsbStats) -> None:
        self.sock = sock
        self.address = address
        self.stats = stats
        self.identity = DeviceMessage(0, 0)
        self.configuration = CONFIGURATION_VALUE
        self.claimed_by: Handle | None = None
        self._alive = True
        self._closed = False
        self._state_lock = threading.Lock()
        self._rx_lock = threading.RLock()
        self._tx_lock = threading.RLock()
        self._rx = LineBuffer()
        self._lines: deque[bytes] = deque()
        self._tx_broken_line = False

    @property
    def alive(self) -> bool:
        return self._alive

    def handshake(self, timeout_s: float) -> DeviceMessage:
        """Read the board's ``device`` message, which docs/devices.md puts first."""
        deadline = time.monotonic() + timeout_s
        with self._rx_lock:
            while not self._lines:
                self._receive(deadline)
            first = decode_message(self._lines.popleft())
        if not isinstance(first, DeviceMessage):
            raise BadMessage("the first message is not the device's introduction")
        self.identity = first
        return first

    def _receive(self, deadline: float | None) -> None:
        """Wait for bytes until ``deadline`` (``None``: for ever); raise on timeout or loss."""
        while True:
            if not self._alive:
                raise usb_error(LIBUSB_ERROR_NO_DEVICE)
            wait = _slice(deadline)
            try:
                readable, _, _ = select.select([self.sock], [], [], wait)
                if not readable:
                    continue
                chunk = self.sock.recv(65536)
            except BlockingIOError:
                continue
            except (OSError, ValueError) as exc:
                self.mark_lost()
                raise usb_error(LIBUSB_ERROR_NO_DEVICE) from exc
            if not chunk:
                # The board closed the connection: it was unplugged.
                self.mark_lost()
                raise usb_error(LIBUSB_ERROR_NO_DEVICE)
            before = self._rx.overlong
            self._lines.extend(self._rx.feed(chunk))
            self.stats.overlong_lines += self._rx.overlong - before
            if self._lines:
                return

    def read_packet(self, ep: int, timeout_ms: int) -> bytes:
        """The next interrupt IN packet for ``ep``, skipping (and counting) anything else."""
        deadline = None if timeout_ms <= 0 else time.monotonic() + timeout_ms / 1000
        with self._rx_lock:
            while True:
                while self._lines:
                    line = self._lines.popleft()
                    try:
                        message = decode_message(line)
                    except BadMessage:
                        self.stats.bad_lines += 1
                        continue
                    if (
                        isinstance(message, PacketMessage)
                        and message.direction == "in"
                        and message.ep == ep
                    ):
                        return message.data
                    self.stats.unexpected_messages += 1
                self._receive(deadline)

    def write_packet(self, ep: int, data: bytes, timeout_ms: int) -> None:
        line = encode_message(PacketMessage("out", ep, data))
        if self._tx_broken_line:
            # A previous write timed out half way: end that line so the board
            # drops it alone and reads this one whole.
            line = b"\n" + line
        deadline = None if timeout_ms <= 0 else time.monotonic() + timeout_ms / 1000
        with self._tx_lock:
            view = memoryview(line)
            while view:
                if not self._alive:
                    raise usb_error(LIBUSB_ERROR_NO_DEVICE)
                try:
                    sent = self.sock.send(view)
                except BlockingIOError:
                    sent = 0
                except (OSError, ValueError) as exc:
                    self.mark_lost()
                    raise usb_error(LIBUSB_ERROR_NO_DEVICE) from exc
                view = view[sent:]
                self._tx_broken_line = bool(view) and len(view) < len(line)
                if not view:
                    break
                wait = _slice(deadline)
                try:
                    select.select([], [self.sock], [], wait)
                except (OSError, ValueError) as exc:
                    self.mark_lost()
                    raise usb_error(LIBUSB_ERROR_NO_DEVICE) from exc

    def peek_alive(self) -> bool:
        """Notice, without reading a message, a board that has closed the connection."""
        if not self._alive:
            return False
        if not self._rx_lock.acquire(blocking=False):
            return True  # a reader is waiting on the socket and will see the close itself
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            if readable and not self.sock.recv(1, socket.MSG_PEEK):
                self.mark_lost()
        except BlockingIOError:
            pass
        except (OSError, ValueError):
            self.mark_lost()
        finally:
            self._rx_lock.release()
        return self._alive

    def mark_lost(self) -> None:
        """The board is gone: wake every waiter; the descriptor is closed by :meth:`close`."""
        with self._state_lock:
            if not self._alive:
                return
            self._alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.mark_lost()
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        # Readers hold only the rx lock and writers only the tx lock, and both
        # return promptly once the socket is shut down, so this cannot deadlock.
        with self._rx_lock, self._tx_lock:
            self.sock.close()


@dataclass(frozen=True, slots=True, eq=False)
class SimDevice:
    """What enumeration yields: the board as seen on one connection."""

    session: Session
    descriptor: DeviceDescriptor


@dataclass(slots=True, eq=False)
class Handle:
    """An open device handle."""

    session: Session
    descriptor: DeviceDescriptor
    open: bool = field(default=True)
