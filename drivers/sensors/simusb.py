"""A pyusb backend that reaches a bet-sensor board over TCP: ``simusb://host:port``.

DEVICES.md ("The simulated board over TCP") lets a simulator or a test rig
stand in for the USB board. This module is a real ``usb.backend.IBackend``, so
the driver runs the very same pyusb calls it runs against libusb —
``usb.core.find(idVendor=…, idProduct=…, backend=…)``, ``claim_interface``,
``dev.read(0x81, 64, timeout)``, ``dev.write(0x01, data)`` — and only the bytes'
road differs.

The wire: the backend connects; every message is one line of JSON::

    board →  {"type": "device", "vid": 4617, "pid": 1, "serial": "…", "product": "…"}  (first, once)
    board →  {"type": "in", "ep": 129, "data": "<hex>"}      an interrupt IN packet
    → board  {"type": "out", "ep": 1, "data": "<hex>"}       an interrupt OUT packet

How it maps onto USB:

* One TCP connection is one plug-in of the board. Enumeration connects when no
  connection is up; if the board does not answer (nothing listening, or no
  ``device`` message) the bus is empty. While a connection is up, enumeration
  shows the same device again.
* The connection closing is the board being unplugged: every later transfer on
  it raises ``usb.core.USBError`` with errno ``ENODEV``, as libusb does, and the
  device must be found again (a new connection is a new device address).
* The descriptors are the board's: one configuration, interface 0 (vendor
  class) with interrupt IN ``0x81`` and interrupt OUT ``0x01``, 64-byte packets.
  String descriptors (product, serial) are answered from the ``device``
  message, so ``dev.product`` and ``dev.serial_number`` work.
* An interrupt read that sees no packet within its timeout raises
  ``usb.core.USBTimeoutError`` with libusb's code and ``ETIMEDOUT``; a timeout
  of 0 waits for ever, as in libusb.
* Lines that are not JSON, too long, or not messages of this protocol are
  counted and skipped; the connection resynchronises at the next newline.

Thread safety: reads, writes and control transfers may come from different
threads (libusb allows concurrent transfers); the driver in this package
makes all its calls from one worker thread anyway.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import select
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import usb.backend
import usb.core

_log = logging.getLogger(__name__)

SCHEME = "simusb"

EP_IN = 0x81
EP_OUT = 0x01
MAX_PACKET_BYTES = 64
INTERFACE = 0
CONFIGURATION_VALUE = 1

MAX_LINE_BYTES = 4096
"""Longest accepted line; a 64-byte packet is under 200 bytes of JSON."""

CONNECT_TIMEOUT_S = 1.0
"""How long enumeration waits for the board to accept and introduce itself."""

_POLL_SLICE_S = 0.25
"""Blocking waits are cut in slices so that closing from another thread is noticed."""

# libusb 1.0 error codes, so that callers see exactly what the libusb backend raises.
LIBUSB_ERROR_IO = -1
LIBUSB_ERROR_INVALID_PARAM = -2
LIBUSB_ERROR_NO_DEVICE = -4
LIBUSB_ERROR_NOT_FOUND = -5
LIBUSB_ERROR_BUSY = -6
LIBUSB_ERROR_TIMEOUT = -7
LIBUSB_ERROR_OVERFLOW = -8
LIBUSB_ERROR_PIPE = -9

_ERRORS: dict[int, tuple[str, int]] = {
    LIBUSB_ERROR_IO: ("Input/output error", errno.EIO),
    LIBUSB_ERROR_INVALID_PARAM: ("Invalid parameter", errno.EINVAL),
    LIBUSB_ERROR_NO_DEVICE: ("No such device (it may have been disconnected)", errno.ENODEV),
    LIBUSB_ERROR_NOT_FOUND: ("Entity not found", errno.ENOENT),
    LIBUSB_ERROR_BUSY: ("Resource busy", errno.EBUSY),
    LIBUSB_ERROR_TIMEOUT: ("Operation timed out", errno.ETIMEDOUT),
    LIBUSB_ERROR_OVERFLOW: ("Overflow", errno.EOVERFLOW),
    LIBUSB_ERROR_PIPE: ("Pipe error", errno.EPIPE),
}


def usb_error(code: int) -> usb.core.USBError:
    """The exception libusb's pyusb backend raises for a libusb error code."""
    text, err = _ERRORS[code]
    if code == LIBUSB_ERROR_TIMEOUT:
        return usb.core.USBTimeoutError(text, code, err)
    return usb.core.USBError(text, code, err)


# --------------------------------------------------------------------------- wire


class BadMessage(ValueError):
    """A line that is not a message of the simusb protocol."""


@dataclass(frozen=True, slots=True)
class DeviceMessage:
    """The board introducing itself, first on every connection."""

    vid: int
    pid: int
    serial: str = ""
    product: str = ""


@dataclass(frozen=True, slots=True)
class PacketMessage:
    """One interrupt packet: ``in`` from the board, ``out`` to it."""

    direction: Literal["in", "out"]
    ep: int
    data: bytes


SimUsbMessage = DeviceMessage | PacketMessage


def encode_message(message: SimUsbMessage) -> bytes:
    """One JSON line, newline included."""
    body: dict[str, object]
    match message:
        case DeviceMessage(vid=vid, pid=pid, serial=serial, product=product):
            body = {"type": "device", "vid": vid, "pid": pid, "serial": serial, "product": product}
        case PacketMessage(direction=direction, ep=ep, data=data):
            body = {"type": direction, "ep": ep, "data": data.hex()}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def _int_field(body: dict[str, Any], key: str, top: int) -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= top:
        raise BadMessage(f"{key!r} must be an integer 0–{top}")
    return value


def _str_field(body: dict[str, Any], key: str) -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise BadMessage(f"{key!r} must be a string")
    return value


def decode_message(line: bytes) -> SimUsbMessage:
    """Parse one line (with or without its newline); raise :class:`BadMessage`."""
    try:
        body = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise BadMessage(f"not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadMessage("a message must be a JSON object")
    kind = body.get("type")
    if kind == "device":
        return DeviceMessage(
            vid=_int_field(body, "vid", 0xFFFF),
            pid=_int_field(body, "pid", 0xFFFF),
            serial=_str_field(body, "serial"),
            product=_str_field(body, "product"),
        )
    if kind in ("in", "out"):
        ep = _int_field(body, "ep", 0xFF)
        text = body.get("data")
        if not isinstance(text, str) or not text.isascii():
            raise BadMessage("'data' must be a hex string")
        try:
            data = bytes.fromhex(text)
        except ValueError as exc:
            raise BadMessage(f"'data' is not hex: {exc}") from exc
        return PacketMessage("in" if kind == "in" else "out", ep, data)
    raise BadMessage(f"unknown message type {kind!r}")


class LineBuffer:
    """Splits a byte stream into lines, with a cap: an over-long line is dropped whole."""

    __slots__ = ("_buf", "_skipping", "cap", "overlong")

    def __init__(self, cap: int = MAX_LINE_BYTES) -> None:
        self.cap = cap
        self._buf = bytearray()
        self._skipping = False
        self.overlong = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        self._buf += chunk
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                break
            line = bytes(self._buf[:end])
            del self._buf[: end + 1]
            if self._skipping:
                # The tail of a line already dropped for its length.
                self._skipping = False
                continue
            if len(line) > self.cap:
                self.overlong += 1
                continue
            lines.append(line)
        if len(self._buf) > self.cap:
            if not self._skipping:
                self.overlong += 1
            self._skipping = True
            self._buf.clear()
        return lines


# ----------------------------------------------------------------------- descriptors


@dataclass(frozen=True, slots=True)
class DeviceDescriptor:
    idVendor: int
    idProduct: int
    address: int
    bLength: int = 18
    bDescriptorType: int = 0x01
    bcdUSB: int = 0x0200
    bDeviceClass: int = 0x00
    bDeviceSubClass: int = 0x00
    bDeviceProtocol: int = 0x00
    bMaxPacketSize0: int = 64
    bcdDevice: int = 0x0100
    iManufacturer: int = 0
    iProduct: int = 1
    iSerialNumber: int = 2
    bNumConfigurations: int = 1
    bus: int = 1
    port_number: int = 1
    port_numbers: tuple[int, ...] = (1,)
    speed: int = 2  # LIBUSB_SPEED_FULL

    def to_bytes(self) -> bytes:
        return struct.pack(
            "<BBHBBBBHHHBBBB",
            self.bLength,
            self.bDescriptorType,
            self.bcdUSB,
            self.bDeviceClass,
            self.bDeviceSubClass,
            self.bDeviceProtocol,
            self.bMaxPacketSize0,
            self.idVendor,
            self.idProduct,
            self.bcdDevice,
            self.iManufacturer,
            self.iProduct,
            self.iSerialNumber,
            self.bNumConfigurations,
        )


@dataclass(frozen=True, slots=True)
class EndpointDescriptor:
    bEndpointAddress: int
    bLength: int = 7
    bDescriptorType: int = 0x05
    bmAttributes: int = 0x03  # interrupt
    wMaxPacketSize: int = MAX_PACKET_BYTES
    bInterval: int = 1
    bRefresh: int = 0
    bSynchAddress: int = 0
    extra_descriptors: tuple[int, ...] = ()

    def to_bytes(self) -> bytes:
        return struct.pack(
            "<BBBBHB",
            self.bLength,
            self.bDescriptorType,
            self.bEndpointAddress,
            self.bmAttributes,
            self.wMaxPacketSize,
            self.bInterval,
        )


@dataclass(frozen=True, slots=True)
class InterfaceDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x04
    bInterfaceNumber: int = INTERFACE
    bAlternateSetting: int = 0
    bNumEndpoints: int = 2
    bInterfaceClass: int = 0xFF  # vendor-specific
    bInterfaceSubClass: int = 0x00
    bInterfaceProtocol: int = 0x00
    iInterface: int = 0
    extra_descriptors: tuple[int, ...] = ()

    def to_bytes(self) -> bytes:
        return bytes(
            [
                self.bLength,
                self.bDescriptorType,
                self.bInterfaceNumber,
                self.bAlternateSetting,
                self.bNumEndpoints,
                self.bInterfaceClass,
                self.bInterfaceSubClass,
                self.bInterfaceProtocol,
                self.iInterface,
            ]
        )


_ENDPOINTS = (EndpointDescriptor(EP_IN), EndpointDescriptor(EP_OUT))
_INTERFACE = InterfaceDescriptor()


@dataclass(frozen=True, slots=True)
class ConfigurationDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x02
    wTotalLength: int = 9 + 9 + 7 + 7
    bNumInterfaces: int = 1
    bConfigurationValue: int = CONFIGURATION_VALUE
    iConfiguration: int = 0
    bmAttributes: int = 0x80  # bus-powered
    bMaxPower: int = 50  # 100 mA in 2 mA units
    extra_descriptors: tuple[int, ...] = ()

    def to_bytes(self) -> bytes:
        head = struct.pack(
            "<BBHBBBBB",
            self.bLength,
            self.bDescriptorType,
            self.wTotalLength,
            self.bNumInterfaces,
            self.bConfigurationValue,
            self.iConfiguration,
            self.bmAttributes,
            self.bMaxPower,
        )
        return head + _INTERFACE.to_bytes() + b"".join(ep.to_bytes() for ep in _ENDPOINTS)


_CONFIGURATION = ConfigurationDescriptor()
_LANGID_EN_US = 0x0409


def _string_descriptor(text: str) -> bytes:
    encoded = text.encode("utf-16-le")[:252]
    return bytes([2 + len(encoded), 0x03]) + encoded


# -------------------------------------------------------------------------- session


@dataclass(slots=True)
class SimUsbStats:
    """What the backend skipped; counters only grow."""

    connects: int = 0
    failed_connects: int = 0
    bad_lines: int = 0
    unexpected_messages: int = 0
    overlong_lines: int = 0


class _Session:
    """One TCP connection to the board: one plug-in, from connect to close."""

    def __init__(self, sock: socket.socket, address: int, stats: SimUsbStats) -> None:
        self.sock = sock
        self.address = address
        self.stats = stats
        self.identity = DeviceMessage(0, 0)
        self.configuration = CONFIGURATION_VALUE
        self.claimed_by: _Handle | None = None
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
        """Read the board's ``device`` message, which DEVICES.md puts first."""
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
            wait = _POLL_SLICE_S
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise usb_error(LIBUSB_ERROR_TIMEOUT)
                wait = min(wait, remaining)
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
                wait = _POLL_SLICE_S
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise usb_error(LIBUSB_ERROR_TIMEOUT)
                    wait = min(wait, remaining)
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
class _SimDevice:
    """What enumeration yields: the board as seen on one connection."""

    session: _Session
    descriptor: DeviceDescriptor


@dataclass(slots=True, eq=False)
class _Handle:
    """An open device handle."""

    session: _Session
    descriptor: DeviceDescriptor
    open: bool = field(default=True)


def parse_url(url: str) -> tuple[str, int]:
    """``simusb://host:port`` → ``(host, port)``."""
    parts = urlsplit(url)
    if parts.scheme != SCHEME or not parts.hostname or parts.path not in ("", "/"):
        raise ValueError(f"not a simusb URL (simusb://host:port): {url!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad port in {url!r}") from exc
    if port is None:
        raise ValueError(f"simusb URL needs a port: {url!r}")
    return parts.hostname, port


class SimUsbBackend(usb.backend.IBackend):  # type: ignore[misc]  # pyusb is untyped
    """pyusb backend for ``simusb://host:port``: one bus holding at most the board there."""

    def __init__(
        self, host: str, port: int, *, connect_timeout_s: float = CONNECT_TIMEOUT_S
    ) -> None:
        super().__init__()
        self.host = host
        self.port = port
        self.connect_timeout_s = connect_timeout_s
        self.stats = SimUsbStats()
        self._lock = threading.Lock()
        self._session: _Session | None = None
        self._closed = False
        self._next_address = 1

    @classmethod
    def from_url(cls, url: str, **kwargs: float) -> SimUsbBackend:
        host, port = parse_url(url)
        return cls(host, port, **kwargs)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{SCHEME}://{host}:{self.port}"

    def __repr__(self) -> str:
        return f"<SimUsbBackend {self.url}>"

    # -- our own lifecycle ------------------------------------------------------

    def disconnect(self) -> None:
        """Let go of the board; the next enumeration connects afresh."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def close(self) -> None:
        """Disconnect for good; enumeration finds nothing afterwards."""
        with self._lock:
            self._closed = True
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def _finalize_object(self) -> None:
        if hasattr(self, "_lock"):
            self.close()

    def _connect(self) -> _Session | None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout_s)
        except OSError as exc:
            _log.debug("simusb: no board at %s: %s", self.url, exc)
            self.stats.failed_connects += 1
            return None
        session = _Session(sock, self._next_address, self.stats)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            identity = session.handshake(self.connect_timeout_s)
        except (OSError, BadMessage, usb.core.USBError) as exc:
            _log.debug("simusb: %s accepted but did not introduce a board: %s", self.url, exc)
            self.stats.failed_connects += 1
            session.close()
            return None
        self.stats.connects += 1
        self._next_address = self._next_address % 127 + 1
        _log.debug(
            "simusb: %s is %04x:%04x %r", self.url, identity.vid, identity.pid, identity.serial
        )
        return session

    # -- IBackend: enumeration and descriptors ----------------------------------

    def enumerate_devices(self) -> list[_SimDevice]:
        with self._lock:
            if self._closed:
                return []
            session = self._session
            if session is None or not session.peek_alive():
                if session is not None:
                    session.close()
                session = self._session = self._connect()
            if session is None:
                return []
            descriptor = DeviceDescriptor(
                idVendor=session.identity.vid,
                idProduct=session.identity.pid,
                address=session.address,
            )
            return [_SimDevice(session, descriptor)]

    def get_parent(self, dev: _SimDevice) -> None:
        return None

    def get_device_descriptor(self, dev: _SimDevice) -> DeviceDescriptor:
        return dev.descriptor

    def get_configuration_descriptor(self, dev: _SimDevice, config: int) -> ConfigurationDescriptor:
        if config != 0:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        return _CONFIGURATION

    def get_interface_descriptor(
        self, dev: _SimDevice, intf: int, alt: int, config: int
    ) -> InterfaceDescriptor:
        if config != 0:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        if intf != 0:
            raise IndexError(f"Invalid interface index {intf}")
        if alt != 0:
            raise IndexError(f"Invalid alternate setting index {alt}")
        return _INTERFACE

    def get_endpoint_descriptor(
        self, dev: _SimDevice, ep: int, intf: int, alt: int, config: int
    ) -> EndpointDescriptor:
        self.get_interface_descriptor(dev, intf, alt, config)
        if not 0 <= ep < len(_ENDPOINTS):
            raise IndexError(f"Invalid endpoint index {ep}")
        return _ENDPOINTS[ep]

    # -- IBackend: handles, configuration, interfaces ---------------------------

    @staticmethod
    def _live(handle: _Handle) -> _Session:
        if not handle.open or not handle.session.alive:
            raise usb_error(LIBUSB_ERROR_NO_DEVICE)
        return handle.session

    def open_device(self, dev: _SimDevice) -> _Handle:
        if not dev.session.alive:
            raise usb_error(LIBUSB_ERROR_NO_DEVICE)
        return _Handle(dev.session, dev.descriptor)

    def close_device(self, dev_handle: _Handle) -> None:
        if dev_handle.session.claimed_by is dev_handle:
            dev_handle.session.claimed_by = None
        dev_handle.open = False

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        session = self._live(dev_handle)
        if config_value not in (0, CONFIGURATION_VALUE):
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        if session.claimed_by is not None and config_value != session.configuration:
            raise usb_error(LIBUSB_ERROR_BUSY)
        session.configuration = config_value

    def get_configuration(self, dev_handle: _Handle) -> int:
        return self._live(dev_handle).configuration

    def set_interface_altsetting(self, dev_handle: _Handle, intf: int, altsetting: int) -> None:
        self._live(dev_handle)
        if intf != INTERFACE or altsetting != 0:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        session = self._live(dev_handle)
        if intf != INTERFACE or session.configuration != CONFIGURATION_VALUE:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        if session.claimed_by is not None and session.claimed_by is not dev_handle:
            raise usb_error(LIBUSB_ERROR_BUSY)
        session.claimed_by = dev_handle

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        session = dev_handle.session
        if intf != INTERFACE or session.claimed_by is not dev_handle:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        session.claimed_by = None

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        self._live(dev_handle)
        return False

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        self._live(dev_handle)
        raise usb_error(LIBUSB_ERROR_NOT_FOUND)

    def attach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        self._live(dev_handle)
        raise usb_error(LIBUSB_ERROR_NOT_FOUND)

    def clear_halt(self, dev_handle: _Handle, ep: int) -> None:
        self._live(dev_handle)

    # -- IBackend: transfers ----------------------------------------------------

    def _claimed(self, dev_handle: _Handle, intf: int) -> _Session:
        session = self._live(dev_handle)
        if intf != INTERFACE or session.claimed_by is not dev_handle:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        return session

    def intr_read(self, dev_handle: _Handle, ep: int, intf: int, buff: Any, timeout: int) -> int:
        session = self._claimed(dev_handle, intf)
        if ep != EP_IN:
            raise usb_error(LIBUSB_ERROR_INVALID_PARAM)
        data = session.read_packet(ep, int(timeout))
        target = memoryview(buff).cast("B")
        if len(data) > len(target):
            # libusb: the device sent more than the buffer holds.
            raise usb_error(LIBUSB_ERROR_OVERFLOW)
        target[: len(data)] = data
        return len(data)

    def intr_write(self, dev_handle: _Handle, ep: int, intf: int, data: Any, timeout: int) -> int:
        session = self._claimed(dev_handle, intf)
        if ep != EP_OUT:
            raise usb_error(LIBUSB_ERROR_INVALID_PARAM)
        payload = memoryview(data).cast("B").tobytes()
        # A transfer longer than the endpoint's packet goes out as several packets.
        chunks = [
            payload[i : i + MAX_PACKET_BYTES] for i in range(0, len(payload), MAX_PACKET_BYTES)
        ] or [b""]
        for chunk in chunks:
            session.write_packet(ep, chunk, int(timeout))
        return len(payload)

    def ctrl_transfer(
        self,
        dev_handle: _Handle,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: Any,
        timeout: int,
    ) -> int:
        session = self._live(dev_handle)
        target = memoryview(data).cast("B")
        if bmRequestType == 0x80 and bRequest == 0x06:  # GET_DESCRIPTOR
            kind, index = wValue >> 8, wValue & 0xFF
            answer = self._descriptor(session, dev_handle.descriptor, kind, index)
        elif bmRequestType == 0x80 and bRequest == 0x00:  # GET_STATUS
            answer = b"\x00\x00"
        elif bmRequestType == 0x80 and bRequest == 0x08:  # GET_CONFIGURATION
            answer = bytes([session.configuration])
        elif bmRequestType == 0x00 and bRequest == 0x09:  # SET_CONFIGURATION
            self.set_configuration(dev_handle, wValue & 0xFF)
            return 0
        else:
            # A real board stalls a request it does not support.
            raise usb_error(LIBUSB_ERROR_PIPE)
        answer = answer[: len(target)]
        target[: len(answer)] = answer
        return len(answer)

    @staticmethod
    def _descriptor(
        session: _Session, descriptor: DeviceDescriptor, kind: int, index: int
    ) -> bytes:
        if kind == 0x01 and index == 0:
            return descriptor.to_bytes()
        if kind == 0x02 and index == 0:
            return _CONFIGURATION.to_bytes()
        if kind == 0x03:
            strings = {
                0: bytes([4, 0x03]) + _LANGID_EN_US.to_bytes(2, "little"),
                descriptor.iProduct: _string_descriptor(session.identity.product),
                descriptor.iSerialNumber: _string_descriptor(session.identity.serial),
            }
            if index in strings:
                return strings[index]
        raise usb_error(LIBUSB_ERROR_PIPE)
