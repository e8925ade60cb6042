"""What the table engine is told: one frozen record per thing that happened.

Every input carries ``at``, the moment it happened (aware, UTC), so the engine
never reads a clock and a journal of inputs replays to the same table.
The service builds these from the device clients' events and journals them
(``codec.py``) before the engine sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal, TypeAlias

DeviceName = Literal["shoe", "console", "sensors"]
DEVICE_NAMES: tuple[DeviceName, ...] = ("shoe", "console", "sensors")

# The shoe driver's reason when a HELLO shows that the shoe rebooted (docs/devices.md):
# its read counter starts again, so the next read numbers begin at ``first_missing``.
REASON_SHOE_REBOOTED = "shoe_rebooted"


class ConsoleAction(StrEnum):
    """The dealer console's buttons the engine acts on (docs/devices.md)."""

    SHUFFLED = "SHUFFLED"
    DEALER = "DEALER"
    NO_MORE_BETS = "NO_MORE_BETS"
    SURRENDER = "SURRENDER"
    WAR = "WAR"
    CARD = "CARD"
    CONFIRM = "CONFIRM"
    VOID_ROUND = "VOID_ROUND"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True)
class CardRead:
    """The shoe read card ``card`` (rank then suit, e.g. ``"TD"``) as read number ``n``."""

    at: datetime
    n: int
    card: str


@dataclass(frozen=True, slots=True)
class Misread:
    """Card ``n`` passed the reader but was not recognised."""

    at: datetime
    n: int


@dataclass(frozen=True, slots=True)
class CoverRead:
    """The cover card passed the reader as read ``n`` (§(h)(4))."""

    at: datetime
    n: int


@dataclass(frozen=True, slots=True)
class ReadGap:
    """The shoe driver could not fill a gap in its read numbers.

    ``reason`` is ``"resend_timeout"`` (the reads from ``first_missing`` were
    given up) or ``"shoe_rebooted"`` (the shoe's counter started again and the
    next read numbers begin at ``first_missing``, normally 1).
    """

    at: datetime
    first_missing: int
    reason: str
    # The last read number given up (``resend_timeout``); None: only ``first_missing``.
    last_missing: int | None = None


@dataclass(frozen=True, slots=True)
class SpotsChanged:
    """A snapshot of the bet sensor board.

    ``present`` and ``fault`` are bitmasks, bit = (position - 1) * 3 + spot with
    spot 0 initial, 1 tie, 2 war. ``values`` lists ``(bit, cents)`` for every
    occupied spot, or is ``None`` for a presence-only board.
    """

    at: datetime
    present: int
    fault: int
    values: tuple[tuple[int, int], ...] | None


@dataclass(frozen=True, slots=True)
class ConsolePress:
    """Dealer console press number ``k``: ``action`` and its optional argument.

    ``action`` is the text the console sent: a ``ConsoleAction`` or, from a
    console that sent something else, any text (refused ``UNKNOWN_ACTION``).
    """

    at: datetime
    k: int
    action: str
    arg: str | None


@dataclass(frozen=True, slots=True)
class PressesRenumbered:
    """The console restarted its press numbering: earlier answers are forgotten."""

    at: datetime


@dataclass(frozen=True, slots=True)
class DeviceOnline:
    at: datetime
    device: DeviceName


@dataclass(frozen=True, slots=True)
class DeviceOffline:
    at: datetime
    device: DeviceName
    detail: str


@dataclass(frozen=True, slots=True)
class ShoeStatus:
    """The shoe's own state from its heartbeat: ``OK``, ``DOOR_OPEN``, ``JAM`` or ``FAULT``."""

    at: datetime
    state: str


@dataclass(frozen=True, slots=True)
class PublishRefused:
    """The broker refused a publish (PUBACK reason code >= 0x80, docs/feed.md)."""

    at: datetime
    topic: str
    reason_code: int
    message_id: str


# The alerts the service raises itself (docs/feed.md's alert table: the journal cannot
# commit, docs/rules.md JOURNAL_FAULT; a replay asked for what the table no longer holds):
# the engine records them.
SERVICE_ALERT_CODES: tuple[str, ...] = ("JOURNAL_FAULT", "REPLAY_UNAVAILABLE")


@dataclass(frozen=True, slots=True)
class ServiceAlert:
    """An alert the service raised itself (``SERVICE_ALERT_CODES``) or, with
    ``resolved_by``, its resolution. An input, so that it is journaled and published
    as every alert is: an ``alert`` event, in its round's alerts and in the stats."""

    at: datetime
    alert: str
    code: str
    message: str
    resolved_by: str | None = None


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passing; nothing else."""

    at: datetime


Input: TypeAlias = (
    CardRead
    | Misread
    | CoverRead
    | ReadGap
    | SpotsChanged
    | ConsolePress
    | PressesRenumbered
    | DeviceOnline
    | DeviceOffline
    | ShoeStatus
    | PublishRefused
    | ServiceAlert
    | Tick
)
