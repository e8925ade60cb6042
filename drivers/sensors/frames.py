"""Codec of the bet-sensor board's reports (docs/devices.md, "Bet sensor board").

Pure functions over bytes: no I/O, no asyncio, shared by the driver and the
simulated board. Every integer is little-endian.

IN reports (board → controller)::

    SPOTS   01 seq:u8 present:u32 fault:u32
    VALUES  02 seq:u8 count:u8, then count × (bit:u8 cents:u32), count ≤ 12

OUT report (controller → board)::

    LIGHTS  10 mask:u32

A report is as long as its content; zero bytes padding it out to the 64-byte
packet are ignored. Anything else raises :class:`BadReport`, which the client
counts and skips.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from drivers.errors import BadReport

MAX_PACKET_BYTES = 64
"""wMaxPacketSize of both interrupt endpoints."""

POSITIONS = 10
"""The board has spots for positions 1–10 (a table uses the first few)."""

SPOTS_PER_POSITION = 3
SPOT_BITS = POSITIONS * SPOTS_PER_POSITION
"""Bits 0–29 name a spot; bits 30 and 31 of a mask are never set."""

SPOT_MASK = (1 << SPOT_BITS) - 1

MAX_VALUES_PER_REPORT = 12
"""docs/devices.md: a VALUES report carries at most 12 spots; more are split over several."""

MAX_CENTS = 0xFFFF_FFFF

_SPOTS = struct.Struct("<BBII")
_VALUES_HEAD = struct.Struct("<BBB")
_VALUE_ITEM = struct.Struct("<BI")
_LIGHTS = struct.Struct("<BI")


class ReportId(IntEnum):
    """First byte of every report."""

    SPOTS = 0x01
    VALUES = 0x02
    LIGHTS = 0x10


class Spot(IntEnum):
    """The three betting spots of a position, in bit order."""

    INITIAL = 0
    TIE = 1
    WAR = 2


def spot_bit(position: int, spot: int) -> int:
    """Bit index of a spot: ``(position − 1) × 3 + spot`` (docs/devices.md)."""
    if not 1 <= position <= POSITIONS:
        raise ValueError(f"position must be 1–{POSITIONS}, not {position}")
    if not 0 <= spot < SPOTS_PER_POSITION:
        raise ValueError(f"spot must be 0 (initial), 1 (tie) or 2 (war), not {spot}")
    return (position - 1) * SPOTS_PER_POSITION + spot


def bit_spot(bit: int) -> tuple[int, Spot]:
    """The (position, spot) a bit index names; the inverse of :func:`spot_bit`."""
    if not 0 <= bit < SPOT_BITS:
        raise ValueError(f"spot bit must be 0–{SPOT_BITS - 1}, not {bit}")
    position, spot = divmod(bit, SPOTS_PER_POSITION)
    return position + 1, Spot(spot)


@dataclass(frozen=True, slots=True)
class SpotsReport:
    """Which spots hold chips and which sensors are faulty, as of change ``seq``."""

    seq: int
    present: int
    fault: int

    def __post_init__(self) -> None:
        _check_u8("seq", self.seq)
        _check_mask("present", self.present)
        _check_mask("fault", self.fault)


@dataclass(frozen=True, slots=True)
class ValuesReport:
    """Chip values of occupied spots: ``(bit, cents)`` pairs, part of change ``seq``."""

    seq: int
    values: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        _check_u8("seq", self.seq)
        if len(self.values) > MAX_VALUES_PER_REPORT:
            raise ValueError(
                f"a VALUES report carries at most {MAX_VALUES_PER_REPORT} spots, "
                f"not {len(self.values)}: split it with values_reports()"
            )
        seen: set[int] = set()
        for bit, cents in self.values:
            if not 0 <= bit < SPOT_BITS:
                raise ValueError(f"spot bit must be 0–{SPOT_BITS - 1}, not {bit}")
            if bit in seen:
                raise ValueError(f"spot bit {bit} appears twice")
            seen.add(bit)
            if not 0 <= cents <= MAX_CENTS:
                raise ValueError(f"cents must fit in u32, not {cents}")


@dataclass(frozen=True, slots=True)
class LightsReport:
    """Spots to light on the layout."""

    mask: int

    def __post_init__(self) -> None:
        _check_mask("mask", self.mask)


InReport = SpotsReport | ValuesReport


def _check_u8(name: str, value: int) -> None:
    if not 0 <= value <= 0xFF:
        raise ValueError(f"{name} must fit in u8, not {value}")


def _check_mask(name: str, value: int) -> None:
    if not 0 <= value <= SPOT_MASK:
        raise ValueError(f"{name} must only use spot bits 0–{SPOT_BITS - 1}, not {value:#x}")


def _body_and_padding(data: bytes, length: int, what: str) -> None:
    """Raise unless ``data`` is ``length`` bytes of report followed only by zero padding."""
    if len(data) < length:
        raise BadReport(f"{what} report of {len(data)} bytes is shorter than {length}", data)
    if any(data[length:]):
        raise BadReport(f"{what} report has non-zero bytes after its {length} bytes", data)


def parse_in_report(data: bytes | bytearray | memoryview) -> InReport:
    """Decode one IN packet; raise :class:`BadReport` for anything the protocol does not allow."""
    raw = bytes(data)
    if not raw:
        raise BadReport("empty report", raw)
    if len(raw) > MAX_PACKET_BYTES:
        raise BadReport(f"report of {len(raw)} bytes exceeds a {MAX_PACKET_BYTES}-byte packet", raw)
    kind = raw[0]
    if kind == ReportId.SPOTS:
        _body_and_padding(raw, _SPOTS.size, "SPOTS")
        _, seq, present, fault = _SPOTS.unpack_from(raw)
        if present & ~SPOT_MASK or fault & ~SPOT_MASK:
            raise BadReport("SPOTS report sets bits beyond spot 29", raw)
        return SpotsReport(seq, present, fault)
    if kind == ReportId.VALUES:
        if len(raw) < _VALUES_HEAD.size:
            raise BadReport("VALUES report shorter than its header", raw)
        _, seq, count = _VALUES_HEAD.unpack_from(raw)
        if count > MAX_VALUES_PER_REPORT:
            raise BadReport(f"VALUES report claims {count} spots, more than 12", raw)
        _body_and_padding(raw, _VALUES_HEAD.size + count * _VALUE_ITEM.size, "VALUES")
        items: list[tuple[int, int]] = []
        seen: set[int] = set()
        for i in range(count):
            bit, cents = _VALUE_ITEM.unpack_from(raw, _VALUES_HEAD.size + i * _VALUE_ITEM.size)
            if bit >= SPOT_BITS:
                raise BadReport(f"VALUES report names spot bit {bit}, beyond 29", raw)
            if bit in seen:
                raise BadReport(f"VALUES report names spot bit {bit} twice", raw)
            seen.add(bit)
            items.append((bit, cents))
        return ValuesReport(seq, tuple(items))
    raise BadReport(f"unknown IN report id {kind:#04x}", raw)


def parse_out_report(data: bytes | bytearray | memoryview) -> LightsReport:
    """Decode one OUT packet (the board's side); raise :class:`BadReport` on anything else."""
    raw = bytes(data)
    if not raw:
        raise BadReport("empty report", raw)
    if len(raw) > MAX_PACKET_BYTES:
        raise BadReport(f"report of {len(raw)} bytes exceeds a {MAX_PACKET_BYTES}-byte packet", raw)
    if raw[0] != ReportId.LIGHTS:
        raise BadReport(f"unknown OUT report id {raw[0]:#04x}", raw)
    _body_and_padding(raw, _LIGHTS.size, "LIGHTS")
    _, mask = _LIGHTS.unpack_from(raw)
    if mask & ~SPOT_MASK:
        raise BadReport("LIGHTS report sets bits beyond spot 29", raw)
    return LightsReport(mask)


def encode_report(report: SpotsReport | ValuesReport | LightsReport, *, pad: bool = False) -> bytes:
    """Encode a report; ``pad`` fills it with zeros to the full 64-byte packet."""
    match report:
        case SpotsReport(seq=seq, present=present, fault=fault):
            out = _SPOTS.pack(ReportId.SPOTS, seq, present, fault)
        case ValuesReport(seq=seq, values=values):
            out = _VALUES_HEAD.pack(ReportId.VALUES, seq, len(values)) + b"".join(
                _VALUE_ITEM.pack(bit, cents) for bit, cents in values
            )
        case LightsReport(mask=mask):
            out = _LIGHTS.pack(ReportId.LIGHTS, mask)
    return out.ljust(MAX_PACKET_BYTES, b"\x00") if pad else out


def values_reports(seq: int, values: Iterable[tuple[int, int]]) -> list[ValuesReport]:
    """Split a full snapshot of chip values into VALUES reports of at most 12 spots.

    An empty snapshot is one report with no spots: it tells the controller that
    no spot holds chips any more.
    """
    items: Sequence[tuple[int, int]] = sorted(values)
    chunks = [
        tuple(items[i : i + MAX_VALUES_PER_REPORT])
        for i in range(0, len(items), MAX_VALUES_PER_REPORT)
    ] or [()]
    return [ValuesReport(seq, chunk) for chunk in chunks]
