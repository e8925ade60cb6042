"""Cards as the shoe writes them: rank then suit (``"TD"`` is the ten of diamonds).

§(f): ranks from lowest to highest 2..10, jack, queen, king, ace; the suit
has no effect on rank.
"""

from __future__ import annotations

from typing import Final

RANKS: Final = "23456789TJQKA"
SUITS: Final = "CDHS"
# Every card of one deck, in a fixed order: its index counts copies in a shoe.
DECK: Final[tuple[str, ...]] = tuple(r + s for r in RANKS for s in SUITS)
CARD_INDEX: Final[dict[str, int]] = {card: i for i, card in enumerate(DECK)}
# §(f): the rank of a card for comparison (2 lowest, ace highest).
CARD_RANK: Final[dict[str, int]] = {card: i // 4 for i, card in enumerate(DECK)}
