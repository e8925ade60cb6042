"""The ``$BODY*CS\\r\\n`` line codec shared by the shoe and the dealer console.

docs/devices.md, "Line framing": BODY is comma-separated printable ASCII, CS two
upper-case hex digits, the XOR of every byte of BODY (as NMEA 0183), at most 96
bytes a frame. A receiver skips bytes up to ``$`` and drops (and counts) frames
with a bad checksum, over-long or unknown ones; it never crashes or stalls on
any byte sequence.

Pure: no I/O, no asyncio, no clock. The device modules (``drivers.shoe.frames``,
``drivers.console.frames``) give the meaning of a body; this module only cuts
bodies out of a byte stream and wraps bodies into frames.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Generic, Self, TypeVar

from drivers.errors import FrameError

MAX_FRAME_BYTES = 96
"""docs/devices.md: at most 96 bytes a frame, from ``$`` to ``\\n`` inclusive."""

FRAME_OVERHEAD_BYTES = len("$*00\r\n")
MAX_BODY_BYTES = MAX_FRAME_BYTES - FRAME_OVERHEAD_BYTES

_START = b"$"
_END = b"\n"
_CR = 0x0D
_STAR = 0x2A
_HEX_DIGITS = frozenset(b"0123456789ABCDEFabcdef")
# Printable ASCII minus the two bytes that delimit a frame: '$' starts one and
# '*' ends its body, so neither can stand inside a body.
_BODY_BYTES = bytes(b for b in range(0x20, 0x7F) if b not in (0x24, 0x2A))

T = TypeVar("T")


def checksum(body: bytes) -> int:
    """XOR of every byte of ``body`` (NMEA 0183)."""
    value = 0
    for byte in body:
        value ^= byte
    return value


def encode_body(body: str) -> bytes:
    """The frame carrying ``body``; ValueError for a body no receiver would accept."""
    raw = body.encode("ascii") if body.isascii() else b"\x00"
    if raw.translate(None, _BODY_BYTES):
        raise ValueError(f"frame body must be printable ASCII without '$' or '*': {body!r}")
    if len(raw) > MAX_BODY_BYTES:
        raise ValueError(f"frame body is {len(raw)} bytes, at most {MAX_BODY_BYTES} fit a frame")
    return b"$%s*%02X\r\n" % (raw, checksum(raw))


def expect_fields(fields: Sequence[str], layout: str) -> None:
    """FrameError unless there is one field per name in ``layout`` (``"<n>,<card>"``)."""
    wanted = len(layout.split(",")) if layout else 0
    if len(fields) != wanted:
        raise FrameError(f"expected {wanted} field(s) {layout!r}, got {len(fields)}")


def parse_count(text: str, what: str, *, minimum: int = 0) -> int:
    """A decimal counter field (digits only: no sign, no spaces), FrameError otherwise."""
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        raise FrameError(f"{what} is not a decimal number: {text!r}")
    value = int(text)
    if value < minimum:
        raise FrameError(f"{what} must be at least {minimum}: {value}")
    return value


def check_token(text: str, what: str) -> str:
    """A free-text field: non-empty and no comma (which would split it)."""
    if not text or "," in text:
        raise FrameError(f"{what} must be non-empty text without commas: {text!r}")
    return text


class LineFrame:
    """Base of every typed frame: ``TAG`` plus fields, encoded as one line.

    Subclasses are frozen slotted dataclasses defining ``TAG``, ``fields()`` and
    ``from_fields()``; ``from_fields`` raises FrameError on bad fields.
    """

    __slots__ = ()
    TAG: ClassVar[str]

    def fields(self) -> tuple[str, ...]:
        return ()

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        raise NotImplementedError

    def body(self) -> str:
        return ",".join((self.TAG, *self.fields()))

    def encode(self) -> bytes:
        return encode_body(self.body())


class CountFrame(LineFrame):
    """A frame whose one field is a counter: ``$TAG,<count>`` (docs/devices.md: MISREAD,
    COVER, RESEND, ACK and the console's STATUS).

    Subclasses are frozen slotted dataclasses with that one field; ``COUNT`` is its
    name as the spec writes it, ``MINIMUM`` the lowest value allowed.
    """

    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]]
    COUNT: ClassVar[str]
    MINIMUM: ClassVar[int] = 1

    if TYPE_CHECKING:

        def __init__(self, count: int, /) -> None: ...

    def fields(self) -> tuple[str, ...]:
        # The dataclass's one field, whatever the subclass calls it.
        return (str(getattr(self, self.__match_args__[0])),)

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        expect_fields(fields, f"<{cls.COUNT}>")
        return cls(parse_count(fields[0], cls.COUNT, minimum=cls.MINIMUM))


F = TypeVar("F", bound=LineFrame)


def frame_parser(*kinds: type[F]) -> Callable[[str], F]:
    """A body parser accepting exactly the given frame types (one direction of one device)."""
    table = {kind.TAG: kind for kind in kinds}

    def parse(body: str) -> F:
        tag, *fields = body.split(",")
        kind = table.get(tag)
        if kind is None:
            raise FrameError(f"unknown frame type {tag!r}")
        return kind.from_fields(fields)

    return parse


@dataclass(slots=True)
class DecoderStats:
    """What a decoder took and threw away; counters only grow."""

    frames: int = 0
    bad_checksum: int = 0
    overlong: int = 0
    unknown: int = 0
    """Well-formed lines whose body is not a frame of this device (type or fields)."""
    malformed: int = 0
    """Candidates cut short by the next ``$``, or not ending in ``*HH\\r\\n``, or with bytes
    outside printable ASCII."""
    skipped_bytes: int = 0
    """Bytes outside any frame (noise between frames)."""

    @property
    def dropped(self) -> int:
        return self.bad_checksum + self.overlong + self.unknown + self.malformed


class LineDecoder(Generic[T]):
    """Incremental, resynchronising decoder of ``$BODY*CS\\r\\n`` frames.

    ``feed()`` takes any chunk of bytes and returns the frames completed by it.
    Every ``$`` starts a new candidate (so noise holding a ``$`` cannot swallow
    the real frame after it); a candidate is dropped and counted as soon as it
    is known to be bad. At most ``MAX_FRAME_BYTES - 1`` bytes are held between
    calls, whatever arrives. ``parse`` turns a checked body into a typed frame
    and raises ValueError (FrameError) for anything it does not know.
    """

    __slots__ = ("_buf", "_parse", "stats")

    def __init__(self, parse: Callable[[str], T]) -> None:
        self._parse = parse
        self._buf = b""
        self.stats = DecoderStats()

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held for the next ``feed()``."""
        return len(self._buf)

    def reset(self) -> None:
        """Forget a partial frame (the link was reopened: its tail will never come)."""
        self._buf = b""

    def feed(self, data: bytes) -> list[T]:
        buf = self._buf + data if self._buf else bytes(data)
        size = len(buf)
        stats = self.stats
        out: list[T] = []
        pos = 0
        while pos < size:
            start = buf.find(_START, pos)
            if start < 0:
                stats.skipped_bytes += size - pos
                pos = size
                break
            stats.skipped_bytes += start - pos
            window = start + MAX_FRAME_BYTES
            end = buf.find(_END, start + 1, window)
            restart = buf.find(_START, start + 1, end if end >= 0 else min(size, window))
            if restart >= 0:
                # A new '$' before this candidate ended: the candidate was cut off.
                stats.malformed += 1
                pos = restart
                continue
            if end < 0:
                if size - start >= MAX_FRAME_BYTES:
                    stats.overlong += 1
                    pos = window
                    continue
                pos = start
                break
            pos = end + 1
            if (
                end - start < FRAME_OVERHEAD_BYTES - 1
                or buf[end - 1] != _CR
                or buf[end - 4] != _STAR
                or buf[end - 3] not in _HEX_DIGITS
                or buf[end - 2] not in _HEX_DIGITS
            ):
                stats.malformed += 1
                continue
            body = buf[start + 1 : end - 4]
            if body.translate(None, _BODY_BYTES):
                stats.malformed += 1
                continue
            if checksum(body) != int(buf[end - 3 : end - 1], 16):
                stats.bad_checksum += 1
                continue
            try:
                frame = self._parse(body.decode("ascii"))
            except ValueError:
                stats.unknown += 1
                continue
            stats.frames += 1
            out.append(frame)
        self._buf = buf[pos:] if pos < size else b""
        return out
