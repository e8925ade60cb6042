"""The live stream's fan-out: every committed change, to each listener of ``/api/live``."""

from __future__ import annotations

import asyncio
from typing import Any, Final

from table_controller.feed.common import BURN_ROLES

QUEUE_MAX: Final = 1000


def without_burn_ranks(record: dict[str, Any]) -> dict[str, Any]:
    """A round record as the live stream carries it: no rank of a burn or set-aside card.

    docs/rules.md §(h)(1): live feeds carry a burn card without its rank, and a card set
    aside (it may be a burn drawn early) too; only the stored round record holds them."""
    out = dict(record)
    cards = record.get("cards")
    if isinstance(cards, list):
        out["cards"] = [
            c | {"card": None} if isinstance(c, dict) and c.get("role") in BURN_ROLES else c
            for c in cards
        ]
    discards = record.get("discards")
    if isinstance(discards, list):
        out["discards"] = [d | {"card": None} if isinstance(d, dict) else d for d in discards]
    return out


class LiveHub:
    """Listeners get every change; a listener that falls behind loses its oldest ones."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[dict[str, Any]]] = set()

    def listen(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_MAX)
        self._queues.add(queue)
        return queue

    def leave(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._queues.discard(queue)

    def publish(self, change: dict[str, Any]) -> None:
        for queue in self._queues:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(change)
