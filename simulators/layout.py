"""What a simulated sensor board knows of its layout: chips, faulty sensors, change count.

Pure (no I/O): :class:`simulators.board.SimulatedBoard` sends what this says.
docs/devices.md: ``seq`` advances by one for each change of the spots; the VALUES
reports of a change (split by 12) precede its SPOTS report and share its
``seq``; a heartbeat repeats the SPOTS report.
"""

from __future__ import annotations

from collections.abc import Mapping

from drivers.sensors.frames import (
    MAX_CENTS,
    SPOT_BITS,
    SpotsReport,
    encode_report,
    spot_bit,
    values_reports,
)


class Layout:
    """The spots of one board; every method that changes them says whether they changed."""

    def __init__(self, *, rfid: bool = True) -> None:
        self.rfid = rfid
        """A board that reads RFID chips (sends VALUES); False: presence only."""
        self._chips: dict[int, int] = {}
        self.fault = 0
        self.seq = 0

    @property
    def present(self) -> int:
        mask = 0
        for bit in self._chips:
            mask |= 1 << bit
        return mask

    @property
    def values(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted(self._chips.items()))

    def set_spots(self, changes: Mapping[tuple[int, int], int | None]) -> bool:
        """Put chips worth ``cents`` on spots (None: take them off) as one change."""
        updates: dict[int, int | None] = {}
        for (position, spot), cents in changes.items():
            bit = spot_bit(position, spot)
            if cents is not None and not 0 <= cents <= MAX_CENTS:
                raise ValueError(f"cents must fit in u32, not {cents}")
            updates[bit] = cents
        changed = False
        for bit, cents in updates.items():
            old = self._chips.get(bit)
            if cents is None:
                self._chips.pop(bit, None)
            else:
                self._chips[bit] = cents
            # A presence-only board cannot see chips swapped for others on the same spot.
            changed |= old != cents if self.rfid else (old is None) != (cents is None)
        return self._changed(changed)

    def clear(self) -> bool:
        """Take every chip off the layout."""
        had_chips = bool(self._chips)
        self._chips.clear()
        return self._changed(had_chips)

    def set_fault(self, bit: int, on: bool) -> bool:
        """Flag (or clear) a spot's sensor as faulty."""
        if not 0 <= bit < SPOT_BITS:
            raise ValueError(f"spot bit must be 0–{SPOT_BITS - 1}, not {bit}")
        fault = self.fault | (1 << bit) if on else self.fault & ~(1 << bit)
        changed = fault != self.fault
        self.fault = fault
        return self._changed(changed)

    def _changed(self, changed: bool) -> bool:
        if changed:
            self.seq = (self.seq + 1) & 0xFF
        return changed

    def state_reports(self, *, pad: bool = False) -> list[bytes]:
        """The whole state: VALUES (from an RFID board) then SPOTS, all of this ``seq``."""
        reports: list[bytes] = []
        if self.rfid:
            reports += [
                encode_report(r, pad=pad) for r in values_reports(self.seq, self._chips.items())
            ]
        reports.append(self.heartbeat_report(pad=pad))
        return reports

    def heartbeat_report(self, *, pad: bool = False) -> bytes:
        """The SPOTS report of the current change."""
        return encode_report(SpotsReport(self.seq, self.present, self.fault), pad=pad)
