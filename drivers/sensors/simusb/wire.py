"""The simusb wire (docs/devices.md, "The simulated board over TCP"): one JSON message a line.

Pure: messages to and from bytes, and a capped line splitter. Shared by the
pyusb backend and the simulated board.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from drivers.errors import BadMessage

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

POLL_SLICE_S = 0.25
"""Blocking waits are cut in slices so that closing from another thread is noticed."""

# --------------------------------------------------------------------------- wire


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
    if port == 0:
        # No board ever listens there: the driver would look for it for ever.
        raise ValueError(f"bad port 0 in {url!r} (1..65535)")
    return parts.hostname, port
