"""A simulated card-reading shoe that speaks the real shoe's bytes (docs/devices.md).

It holds N decks shuffled from a seeded (or the system's) random source, or a
given card order, with the cover card at a chosen penetration (§5324.22(c),
(h)(4)). Each ``draw()`` passes one card through the reader: it takes the next
read number and is reported as ``CARD``, ``MISREAD`` or ``COVER``. The shoe
keeps its last 64 reads for ``RESEND``, answers ``INFO`` with ``HELLO``, says
``HELLO`` when a controller connects and at power-up, and sends ``STATUS``
heartbeats every ``heartbeat_s`` (at least once a second by default).

Faults to inject, each by probability (``ShoeFaults``) or on one draw:
misreads, dropped reads (the number is taken, the frame never sent; a resend
still has it), noise between frames, bad checksums, an open door (or jam,
fault), a hung shoe (``hang()``: silent, link up), a pulled cable (``disconnect()``), and
a power cycle (the counter starts again).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from drivers.lineframe.cards import DECK, Card
from drivers.lineframe.codec import LineFrame
from drivers.shoe.frames import (
    CardFrame,
    CoverFrame,
    HelloFrame,
    InfoFrame,
    MisreadFrame,
    ReadFrame,
    ResendFrame,
    ShoeCommand,
    ShoeCondition,
    StatusFrame,
    parse_command,
)
from simulators.errors import ShoeEmptyError as ShoeEmptyError
from simulators.fields import check_field, check_fits
from simulators.serve import SimulatedLineDevice

KEPT_READS = 64
"""docs/devices.md: the shoe keeps the last 64 reads for RESEND."""
DEFAULT_HEARTBEAT_S = 0.5
"""Comfortably more often than the once a second docs/devices.md asks for."""
DEFAULT_PENETRATION = 0.75
MAX_GARBAGE_BYTES = 24
DEFAULT_SERIAL = "SIM-SHOE-0001"
DEFAULT_FIRMWARE = "1.0.0"
MAX_LAST_N = 9_999_999_999
"""The highest read count a driver reads (ten digits): ``HELLO`` must fit a frame with it."""


def check_identity(serial: str, firmware: str = DEFAULT_FIRMWARE) -> None:
    """FrameFieldError unless ``serial`` and ``firmware`` can stand as fields of ``HELLO``
    (no comma, ``$``, ``*`` or byte that is not printable ASCII) and it fits one frame."""
    check_field(serial, "serial")
    check_field(firmware, "firmware")
    check_fits(
        HelloFrame(serial, firmware, MAX_LAST_N),
        f"HELLO of serial {serial!r} and firmware {firmware!r}",
    )


@dataclass(frozen=True, slots=True)
class ShoeFaults:
    """Probabilities of faults; each applies independently to every read or frame."""

    misread: float = 0.0
    """A card passes unrecognised (MISREAD instead of CARD)."""
    drop: float = 0.0
    """A read's frame is never sent (the read number is taken; a RESEND has it)."""
    garbage: float = 0.0
    """Noise bytes go out before a frame."""
    bad_checksum: float = 0.0
    """A frame goes out with a wrong checksum."""

    def __post_init__(self) -> None:
        for name in ("misread", "drop", "garbage", "bad_checksum"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"fault probability {name} must be within 0..1, not {value}")


@dataclass(frozen=True, slots=True)
class SimulatedRead:
    """One pass of the reader: the number, the physical card (None: the cover card),
    what the shoe reported and whether that frame was dropped on the way."""

    n: int
    card: Card | None
    frame: ReadFrame
    dropped: bool = False


def build_shoe(decks: int, rng: random.Random) -> list[Card]:
    cards = list(DECK) * decks
    rng.shuffle(cards)
    return cards


class ShoeSimulator(SimulatedLineDevice[ShoeCommand]):
    """A card-reading shoe served over a pty or TCP; tests and the demo call ``draw()``."""

    def __init__(
        self,
        *,
        decks: int = 6,
        seed: int | None = None,
        cards: Sequence[Card] | None = None,
        penetration: float = DEFAULT_PENETRATION,
        cover_after: int | None = None,
        serial: str = DEFAULT_SERIAL,
        firmware: str = DEFAULT_FIRMWARE,
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
        faults: ShoeFaults | None = None,
        fault_seed: int | None = None,
    ) -> None:
        check_identity(serial, firmware)  # before anything is served
        super().__init__(name="shoe", parse=parse_command, heartbeat_s=heartbeat_s)
        self.decks = decks
        self.serial = serial
        self.firmware = firmware
        self.faults = faults or ShoeFaults()
        self.penetration = penetration
        self._rng = random.Random(seed)
        base = fault_seed if fault_seed is not None else seed
        # Separate sources, so which reads are dropped or misread depends on the seed
        # alone, not on how many heartbeats happened to go out in between.
        self._read_rng = random.Random(None if base is None else f"reads-{base}")
        self._line_rng = random.Random(None if base is None else f"line-{base}")
        self.last_n = 0
        """The shoe's read counter: the number of the last read since power-up."""
        self.state = ShoeCondition.OK
        self._kept: deque[ReadFrame] = deque(maxlen=KEPT_READS)
        self.dropped_reads = 0
        self.bad_checksums = 0
        self.noise_bursts = 0
        self._order: list[Card | None] = []
        self._next = 0
        self.load(cards, cover_after=cover_after)

    # -- the shoe ----------------------------------------------------------------------

    def load(self, cards: Sequence[Card] | None = None, *, cover_after: int | None = None) -> None:
        """Put a new shoe in: ``cards`` in this order, or the decks freshly shuffled.

        The cover card goes after ``cover_after`` cards, by default at the
        penetration (a fraction of the cards). The read counter goes on.
        """
        order: list[Card] = list(cards) if cards is not None else build_shoe(self.decks, self._rng)
        cut = round(len(order) * self.penetration) if cover_after is None else cover_after
        if not 0 <= cut <= len(order):
            raise ValueError(f"cover_after must be within 0..{len(order)}, not {cut}")
        self._order = [*order[:cut], None, *order[cut:]]
        self._next = 0

    @property
    def remaining(self) -> int:
        """Cards (the cover card included) still in the shoe."""
        return len(self._order) - self._next

    @property
    def order(self) -> list[Card | None]:
        """The whole shoe in dealing order; None is the cover card."""
        return list(self._order)

    def draw(
        self, card: Card | None = None, *, misread: bool | None = None, drop: bool | None = None
    ) -> SimulatedRead:
        """Pass the next card of the shoe (or ``card``, from outside the order) through
        the reader. ``misread``/``drop`` force or forbid those faults for this read."""
        if card is None:
            if self._next >= len(self._order):
                raise ShoeEmptyError("the shoe is empty")
            physical = self._order[self._next]
            self._next += 1
        else:
            physical = card
        self.last_n += 1
        n = self.last_n
        frame: ReadFrame
        if physical is None:
            frame = CoverFrame(n)  # the cover card's colour is never mistaken
        elif misread if misread is not None else self._chance(self._read_rng, self.faults.misread):
            frame = MisreadFrame(n)
        else:
            frame = CardFrame(n, physical)
        self._kept.append(frame)
        dropped = drop if drop is not None else self._chance(self._read_rng, self.faults.drop)
        if dropped:
            self.dropped_reads += 1
        else:
            self.send_frame(frame)
        return SimulatedRead(n, physical, frame, dropped)

    def set_state(self, state: ShoeCondition) -> None:
        """Open the door, jam, fault or set it right; reported at once and in heartbeats."""
        self.state = state
        self.send_frame(self._status())

    def power_cycle(self) -> None:
        """Off and on: the read counter starts again and kept reads are gone; the cards
        in the shoe stay where they are."""
        self.last_n = 0
        self._kept.clear()
        self.state = ShoeCondition.OK
        self.hung = False
        self.send_frame(self._hello())

    # -- the line ----------------------------------------------------------------------

    def _hello(self) -> HelloFrame:
        return HelloFrame(self.serial, self.firmware, self.last_n)

    def _status(self) -> StatusFrame:
        return StatusFrame(self.last_n, self.state)

    def heartbeat(self) -> LineFrame | None:
        return self._status()

    def send_frame(self, frame: LineFrame) -> bool:
        """Send one frame through the line's faults (noise, bad checksums)."""
        if self.hung:
            return False
        data = frame.encode()
        if self._chance(self._line_rng, self.faults.bad_checksum):
            # Flip a bit of the checksum's value: still two hex digits, never right.
            data = data[:-4] + b"%02X" % (int(data[-4:-2], 16) ^ 0x10) + data[-2:]
            self.bad_checksums += 1
        if self._chance(self._line_rng, self.faults.garbage):
            size = self._line_rng.randint(1, MAX_GARBAGE_BYTES)
            data = self._line_rng.randbytes(size) + data
            self.noise_bursts += 1
        return self.server.send(data)

    def on_connect(self) -> None:
        self.send_frame(self._hello())

    def on_command(self, command: ShoeCommand) -> None:
        if isinstance(command, InfoFrame):
            self.send_frame(self._hello())
        elif isinstance(command, ResendFrame):
            for frame in list(self._kept):
                if frame.n >= command.n:
                    self.send_frame(frame)

    @staticmethod
    def _chance(rng: random.Random, probability: float) -> bool:
        return probability > 0.0 and rng.random() < probability
