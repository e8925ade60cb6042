"""Playing cards as the shoe and the console write them (docs/devices.md, "Line framing").

A card is written rank then suit: rank ``2``–``9``, ``T``, ``J``, ``Q``, ``K``,
``A``; suit ``C``, ``D``, ``H``, ``S`` (``TD`` is the ten of diamonds). Ranks
compare as the game ranks them, ace high and suits equal (§5324.22(f)).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Self

_RANK_SYMBOLS = "23456789TJQKA"


class Rank(IntEnum):
    """A card's rank; the integer order is the game's order, ace high (§5324.22(f))."""

    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13
    ACE = 14

    @property
    def symbol(self) -> str:
        """The one character the devices write for this rank."""
        return _RANK_SYMBOLS[self.value - 2]

    @classmethod
    def from_symbol(cls, symbol: str) -> Rank:
        index = _RANK_SYMBOLS.find(symbol) if len(symbol) == 1 else -1
        if index < 0:
            raise ValueError(f"not a card rank: {symbol!r} (expected one of {_RANK_SYMBOLS})")
        return cls(index + 2)


class Suit(StrEnum):
    """A card's suit; it never affects a card's rank (§5324.22(f))."""

    CLUBS = "C"
    DIAMONDS = "D"
    HEARTS = "H"
    SPADES = "S"


@dataclass(frozen=True, slots=True)
class Card:
    """One playing card; ``str(card)`` is its two-character device form."""

    rank: Rank
    suit: Suit

    def __str__(self) -> str:
        return f"{self.rank.symbol}{self.suit.value}"

    @classmethod
    def parse(cls, text: str) -> Self:
        """The card written as ``text`` (``"AS"``, ``"TD"``); ValueError if it is not one."""
        if len(text) != 2:
            raise ValueError(f"not a card: {text!r} (rank then suit, as 'TD')")
        try:
            return cls(Rank.from_symbol(text[0]), Suit(text[1]))
        except ValueError as exc:
            raise ValueError(f"not a card: {text!r} (rank then suit, as 'TD')") from exc


DECK: tuple[Card, ...] = tuple(Card(rank, suit) for suit in Suit for rank in Rank)
"""The 52 cards of one deck (§5324.22(c))."""
