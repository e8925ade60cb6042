"""The card-reading shoe: ``frames`` (bytes ↔ frames) → ``protocol`` (read order, gaps,
reboots, heartbeat; pure) → ``client`` (``ShoeClient``: async, reconnecting)."""

from drivers.lineframe.cards import Card, Rank, Suit
from drivers.shoe.client import ShoeClient
from drivers.shoe.frames import ShoeCondition
from drivers.shoe.protocol import (
    CardDrawn,
    CardMisread,
    CoverDrawn,
    ReadsLost,
    ReadsLostReason,
    ShoeEvent,
    ShoeOffline,
    ShoeOnline,
    ShoeRead,
    ShoeState,
)

__all__ = [
    "Card",
    "CardDrawn",
    "CardMisread",
    "CoverDrawn",
    "Rank",
    "ReadsLost",
    "ReadsLostReason",
    "ShoeClient",
    "ShoeCondition",
    "ShoeEvent",
    "ShoeOffline",
    "ShoeOnline",
    "ShoeRead",
    "ShoeState",
    "Suit",
]
