"""The shoe's link rules, sans I/O: reads in order exactly once, gaps, reboots, heartbeat.

docs/devices.md, "Card-reading shoe":

- Every card passing the reader takes the next read number ``n``. Reads are
  handed on in read-number order, each exactly once: a repeated ``n`` is
  ignored; a gap (a skipped ``n``, or a ``STATUS``/``HELLO`` whose last ``n`` is
  ahead of what arrived) is asked for with ``RESEND,<first missing>`` and the
  later reads are held until it is filled.
- A resend that has not filled its gap within 1 s is given up (docs/rules.md,
  ``SHOE_READ_GAP``): :class:`ReadsLost` with reason ``resend_timeout``, then the
  held reads go on.
- The controller resumes from the last ``n`` it journaled (``last_n``): it asks
  only for what it missed, never for reads it already has.
- A ``HELLO`` whose last ``n`` is below the last read taken means the shoe
  rebooted and its counter starts again: report :class:`ReadsLost` with reason
  ``shoe_rebooted`` (always: whoever numbers reads after us must start again
  too, and reads before the reboot may be lost), and if that last ``n`` is
  above 0 ask ``RESEND,1``.
- Frame plausibility: the XOR checksum cannot see two flips of the same bit
  (``$CARD,10,AS`` can arrive as ``$CARD,98,AS``). A read number more than 64
  (the shoe's resend window) past the higher of the last ``n`` in the shoe's
  latest ``STATUS`` or ``HELLO`` and the last read taken, or a ``STATUS`` whose
  last ``n`` is below reads already taken (only a ``HELLO`` announces a reboot),
  is dropped and counted in :attr:`ShoeProtocol.corrupt`: never acted on, not a
  heartbeat, and no gap of its own (a read it may have carried is asked for
  when a later read, ``STATUS`` or ``HELLO`` shows it missing).
- No ``STATUS`` for 3 s: the session is dropped as silent (docs/rules.md, ``DEVICE_OFFLINE``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from drivers.lineframe.cards import Card
from drivers.lineframe.session import HEARTBEAT_TIMEOUT_S, LinkProtocol, Step
from drivers.shoe.frames import (
    CardFrame,
    CoverFrame,
    HelloFrame,
    InfoFrame,
    MisreadFrame,
    ResendFrame,
    ShoeCommand,
    ShoeCondition,
    ShoeReport,
    StatusFrame,
)

RESEND_WINDOW = 64
"""docs/devices.md: the shoe keeps its last 64 reads; a read further ahead than that of what
the shoe itself said is not plausible."""

RESEND_TIMEOUT_S = 1.0
"""docs/rules.md, SHOE_READ_GAP: a gap that a resend did not fill within 1 s."""

INFO_RETRY_S = 1.0
"""Ask ``$INFO`` again this often until a ``HELLO`` arrives (a lost HELLO must not leave
the shoe unidentified for the whole session)."""


class ReadsLostReason(StrEnum):
    RESEND_TIMEOUT = "resend_timeout"
    SHOE_REBOOTED = "shoe_rebooted"


@dataclass(frozen=True, slots=True)
class CardDrawn:
    """Read ``n`` was this card."""

    n: int
    card: Card


@dataclass(frozen=True, slots=True)
class CardMisread:
    """Read ``n`` passed the reader but was not recognised (docs/rules.md, ``MISREAD``)."""

    n: int


@dataclass(frozen=True, slots=True)
class CoverDrawn:
    """The cover card passed the reader as read ``n`` (§5324.22(h)(4))."""

    n: int


@dataclass(frozen=True, slots=True)
class ShoeState:
    """The state the shoe reports changed (first report included)."""

    state: ShoeCondition


@dataclass(frozen=True, slots=True)
class ShoeOnline:
    """The shoe identified itself: first contact, or back after being offline."""

    serial: str
    firmware: str


@dataclass(frozen=True, slots=True)
class ShoeOffline:
    """The link to the shoe is down or the shoe went silent; reported once per loss."""

    reason: str


@dataclass(frozen=True, slots=True)
class ReadsLost:
    """Reads that will never be delivered (docs/rules.md, ``SHOE_READ_GAP``).

    ``resend_timeout``: reads ``first_missing``..``last_missing`` were asked for
    again and did not come within 1 s; the reads after them go on.
    ``shoe_rebooted``: the shoe's counter restarted; ``first_missing`` is the first
    read of the old count never received and ``last_missing`` is None (unknown).
    """

    first_missing: int
    reason: ReadsLostReason
    last_missing: int | None = None


ShoeRead = CardDrawn | CardMisread | CoverDrawn
ShoeEvent = CardDrawn | CardMisread | CoverDrawn | ShoeState | ShoeOnline | ShoeOffline | ReadsLost


def read_event(frame: CardFrame | MisreadFrame | CoverFrame) -> ShoeRead:
    if isinstance(frame, CardFrame):
        return CardDrawn(frame.n, frame.card)
    if isinstance(frame, MisreadFrame):
        return CardMisread(frame.n)
    return CoverDrawn(frame.n)


@dataclass(frozen=True, slots=True)
class _Resend:
    covers_to: int
    """The highest read known to exist when the resend was asked: it is expected to fill
    every gap up to here."""
    deadline: float


@dataclass(slots=True)
class _Out:
    events: list[ShoeEvent] = field(default_factory=list)
    send: list[ShoeCommand] = field(default_factory=list)
    online: ShoeOnline | None = None

    def step(self) -> Step[ShoeCommand, ShoeEvent]:
        return Step(events=tuple(self.events), send=tuple(self.send), online=self.online)


class ShoeProtocol(LinkProtocol[ShoeReport, ShoeCommand, ShoeEvent]):
    """Read ordering, gap filling and the heartbeat watchdog of one shoe."""

    def __init__(
        self,
        last_n: int = 0,
        *,
        heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
        resend_timeout_s: float = RESEND_TIMEOUT_S,
        info_retry_s: float = INFO_RETRY_S,
    ) -> None:
        if last_n < 0:
            raise ValueError(f"last_n must be 0 or more, not {last_n}")
        self._heartbeat_timeout_s = heartbeat_timeout_s
        self._resend_timeout_s = resend_timeout_s
        self._info_retry_s = info_retry_s
        self._taken = last_n
        self._known_last = last_n
        self._reported_last = 0
        """The last ``n`` of the shoe's latest plausible STATUS or HELLO."""
        self._held: dict[int, ShoeRead] = {}
        self._resend: _Resend | None = None
        self._condition: ShoeCondition | None = None
        self._heartbeat_deadline: float | None = None
        self._info_deadline: float | None = None
        self.duplicates = 0
        """Reads received again (after a resend, or repeated by the shoe) and ignored."""
        self.corrupt = 0
        """Frames with a good checksum but implausible numbers, dropped (docs/devices.md)."""

    @property
    def taken(self) -> int:
        """The last read number handed on: what the controller journals to resume from."""
        return self._taken

    @property
    def held(self) -> int:
        """Reads received ahead of a gap, waiting for it to be filled or given up."""
        return len(self._held)

    def connection_made(self, now: float) -> Step[ShoeCommand, ShoeEvent]:
        self._heartbeat_deadline = now + self._heartbeat_timeout_s
        self._info_deadline = now + self._info_retry_s
        # A resend asked on the old link may have been lost with it; ask again after HELLO.
        self._resend = None
        return Step(send=(InfoFrame(),))

    def frame_received(self, frame: ShoeReport, now: float) -> Step[ShoeCommand, ShoeEvent]:
        if not self._plausible(frame):
            # Dropped as if it had never come: no heartbeat, no gap, no state.
            self.corrupt += 1
            return Step()
        out = _Out()
        if isinstance(frame, StatusFrame):
            self._heartbeat_deadline = now + self._heartbeat_timeout_s
            self._reported_last = frame.last_n
            if frame.state != self._condition:
                self._condition = frame.state
                out.events.append(ShoeState(frame.state))
            self._known_last = max(self._known_last, frame.last_n)
        elif isinstance(frame, HelloFrame):
            self._info_deadline = None
            self._reported_last = frame.last_n
            out.online = ShoeOnline(frame.serial, frame.firmware)
            if frame.last_n < self._taken:
                self._restart_count(frame.last_n, out)
            else:
                self._known_last = max(self._known_last, frame.last_n)
        else:
            n = frame.n
            if n <= self._taken or n in self._held:
                self.duplicates += 1
            else:
                self._held[n] = read_event(frame)
                self._known_last = max(self._known_last, n)
        self._advance(now, out)
        return out.step()

    def _plausible(self, frame: ShoeReport) -> bool:
        """docs/devices.md, frame plausibility: what two flips of one bit could have made."""
        if isinstance(frame, StatusFrame):
            # The counter cannot go back without a HELLO announcing a reboot, nor run on
            # past the resend window between two heartbeats (at least one a second).
            base = max(self._reported_last, self._taken)
            return self._taken <= frame.last_n <= base + RESEND_WINDOW
        if isinstance(frame, HelloFrame):
            return True  # the only frame that may announce a reboot
        return frame.n <= max(self._reported_last, self._taken) + RESEND_WINDOW

    def timer(self, now: float) -> Step[ShoeCommand, ShoeEvent]:
        if self._heartbeat_deadline is not None and now >= self._heartbeat_deadline:
            self._heartbeat_deadline = None
            self._info_deadline = None
            return Step(lost="heartbeat_timeout")
        out = _Out()
        if self._info_deadline is not None and now >= self._info_deadline:
            self._info_deadline = now + self._info_retry_s
            out.send.append(InfoFrame())
        resend = self._resend
        if resend is not None and now >= resend.deadline:
            self._resend = None
            self._give_up(resend.covers_to, out)
        self._advance(now, out)
        return out.step()

    def deadline(self) -> float | None:
        times = [
            t
            for t in (
                self._heartbeat_deadline,
                self._info_deadline,
                self._resend.deadline if self._resend is not None else None,
            )
            if t is not None
        ]
        return min(times) if times else None

    def _restart_count(self, last_n: int, out: _Out) -> None:
        """The shoe rebooted: its numbering starts again at 1 (docs/devices.md)."""
        out.events.append(ReadsLost(self._taken + 1, ReadsLostReason.SHOE_REBOOTED))
        self._taken = 0
        self._known_last = last_n
        self._held.clear()
        self._resend = None

    def _give_up(self, upto: int, out: _Out) -> None:
        """A resend did not fill the gaps up to ``upto`` in time: skip the missing numbers."""
        first = self._taken + 1
        # Walk the held reads, not the number range: a corrupted ``n`` far ahead must not
        # make this loop long.
        for n in sorted(k for k in self._held if k <= upto):
            if n > first:
                out.events.append(ReadsLost(first, ReadsLostReason.RESEND_TIMEOUT, n - 1))
            out.events.append(self._held.pop(n))
            first = n + 1
        if first <= upto:
            out.events.append(ReadsLost(first, ReadsLostReason.RESEND_TIMEOUT, upto))
        self._taken = max(self._taken, upto)

    def _advance(self, now: float, out: _Out) -> None:
        while (read := self._held.pop(self._taken + 1, None)) is not None:
            self._taken += 1
            out.events.append(read)
        if self._taken >= self._known_last:
            self._resend = None
            return
        resend = self._resend
        if resend is not None and self._taken < resend.covers_to:
            return  # the resend asked for is still on its way
        # A gap with no resend covering it: ask from the first missing read. The shoe
        # sends everything from there on, so one request covers every gap known now.
        self._resend = _Resend(covers_to=self._known_last, deadline=now + self._resend_timeout_s)
        out.send.append(ResendFrame(self._taken + 1))
