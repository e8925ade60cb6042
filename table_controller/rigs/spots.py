"""The sensor board's spots, as the rigs number them (docs/devices.md: bit = 3 × (position − 1)
+ spot, with spot 0 the initial wager, 1 the tie, 2 the war)."""

from __future__ import annotations

from typing import Final

SPOT_INITIAL: Final = 0
SPOT_TIE: Final = 1
SPOT_WAR: Final = 2
SPOT_NUMBERS: Final = {"initial": SPOT_INITIAL, "tie": SPOT_TIE, "war": SPOT_WAR}


def spot_bit(position: int, spot: str) -> int:
    """The board's bit for a position's spot by name (``initial``, ``tie``, ``war``)."""
    return (position - 1) * 3 + SPOT_NUMBERS[spot]
