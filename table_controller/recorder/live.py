"""The live stream's fan-out: every committed change, to each listener of ``/api/live``."""

from __future__ import annotations

import asyncio
from typing import Any, Final

QUEUE_MAX: Final = 1000


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
