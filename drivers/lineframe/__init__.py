"""The ``$BODY*CS\\r\\n`` line framing shared by the shoe and the dealer console.

``codec`` cuts frames out of bytes, ``cards`` holds the card notation both
devices use, ``session`` is the contract of a pure link protocol and ``link``
runs one over a serial transport with reconnects.
"""

from drivers.errors import FrameError
from drivers.lineframe.cards import DECK, Card, Rank, Suit
from drivers.lineframe.codec import (
    MAX_FRAME_BYTES,
    DecoderStats,
    LineDecoder,
    LineFrame,
    checksum,
    encode_body,
)

__all__ = [
    "DECK",
    "MAX_FRAME_BYTES",
    "Card",
    "DecoderStats",
    "FrameError",
    "LineDecoder",
    "LineFrame",
    "Rank",
    "Suit",
    "checksum",
    "encode_body",
]
