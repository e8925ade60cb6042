"""From the board's reports to what the table needs to know (docs/devices.md, "Bet sensor board").

Pure: the client feeds every report it reads into a :class:`SnapshotAssembler`
and forwards the snapshots it returns. No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.sensors.frames import InReport, SpotsReport, ValuesReport, spot_bit


@dataclass(frozen=True, slots=True)
class SpotsSnapshot:
    """The whole layout as the board last reported it.

    ``present`` and ``fault`` are spot masks (bit ``(position − 1) × 3 + spot``).
    ``values`` holds ``(bit, cents)`` for the occupied spots, sorted by bit, on
    a board that reads RFID chips, when the VALUES of this very change (``seq``)
    came with it. It is ``None`` whenever the values are not known: from a
    presence-only board (one that has not sent VALUES on this connection), and
    from an RFID board whose SPOTS report of a new ``seq`` came without VALUES
    of that ``seq`` (docs/devices.md: such a snapshot "leaves every value unknown").
    """

    seq: int
    present: int
    fault: int
    values: tuple[tuple[int, int], ...] | None

    def holds_chips(self, position: int, spot: int) -> bool:
        return bool(self.present >> spot_bit(position, spot) & 1)

    def is_faulty(self, position: int, spot: int) -> bool:
        return bool(self.fault >> spot_bit(position, spot) & 1)

    def cents(self, position: int, spot: int) -> int | None:
        """Value of the chips on a spot, or ``None`` when empty or not known."""
        if self.values is None:
            return None
        bit = spot_bit(position, spot)
        for value_bit, cents in self.values:
            if value_bit == bit:
                return cents
        return None


@dataclass(frozen=True, slots=True)
class BoardOnline:
    """The board is found, opened and reporting again."""

    serial: str
    product: str


@dataclass(frozen=True, slots=True)
class BoardOffline:
    """The board is gone (unplugged, silent for too long, or cannot be opened)."""

    reason: str


SensorEvent = SpotsSnapshot | BoardOnline | BoardOffline


class SnapshotAssembler:
    """Builds snapshots from one connection's reports and says when they change.

    docs/devices.md: the VALUES reports of a change precede its SPOTS report and
    share its ``seq``; several VALUES reports of one ``seq`` together are the
    full snapshot of values. So VALUES are gathered per ``seq`` and take effect
    only with the SPOTS report of that same ``seq``; a SPOTS report of a new
    ``seq`` without them leaves every value unknown (never the values of an
    earlier change: the chips may have been swapped since). Heartbeats repeat
    the last SPOTS report (its ``seq``) and change nothing.
    """

    __slots__ = ("_force", "_last", "_pending", "_pending_seq", "_values", "_values_seq")

    def __init__(self) -> None:
        self._pending_seq: int | None = None
        self._pending: dict[int, int] = {}
        self._values: dict[int, int] | None = None
        self._values_seq: int | None = None
        """The change the values belong to: they hold only for SPOTS of this ``seq``."""
        self._last: SpotsSnapshot | None = None
        self._force = True

    def reset(self) -> None:
        """Forget everything: a new connection starts from the board's next reports.

        Values are forgotten too, since the board may have changed while away;
        the first snapshot after a reset is emitted even if it equals the last one.
        """
        self._pending_seq = None
        self._pending = {}
        self._values = None
        self._values_seq = None
        self._force = True

    @property
    def last(self) -> SpotsSnapshot | None:
        return self._last

    def feed(self, report: InReport) -> SpotsSnapshot | None:
        """Take one report; return a snapshot when the layout changed, else ``None``."""
        if isinstance(report, ValuesReport):
            if report.seq != self._pending_seq:
                # A new change: whatever was gathered for another seq is stale.
                self._pending_seq = report.seq
                self._pending = {}
            self._pending.update(report.values)
            return None
        return self._on_spots(report)

    def _on_spots(self, report: SpotsReport) -> SpotsSnapshot | None:
        if self._pending_seq == report.seq:
            self._values = self._pending
            self._values_seq = report.seq
            self._pending_seq = None
            self._pending = {}
        elif self._values_seq != report.seq:
            # A new change without its VALUES (or a board that never sends them).
            self._values = None
            self._values_seq = None
        values: tuple[tuple[int, int], ...] | None = None
        if self._values is not None:
            # Only occupied spots have a value; one for an empty spot is stale.
            values = tuple(
                sorted((bit, c) for bit, c in self._values.items() if report.present >> bit & 1)
            )
        snapshot = SpotsSnapshot(report.seq, report.present, report.fault, values)
        last = self._last
        changed = (
            self._force
            or last is None
            or (last.present, last.fault, last.values)
            != (snapshot.present, snapshot.fault, snapshot.values)
        )
        if not changed:
            return None
        self._force = False
        self._last = snapshot
        return snapshot
