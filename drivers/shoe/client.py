"""The card-reading shoe as an async context manager and an async iterator of events.

::

    async with ShoeClient("/dev/war-shoe", last_n=journal.last_read) as shoe:
        async for event in shoe:
            match event:
                case CardDrawn(n, card): ...
                case ReadsLost(first, reason): ...  # SHOE_READ_GAP

The client sends ``$INFO`` on every connect, hands on reads in read-number
order exactly once (asking ``RESEND`` for gaps), reports the shoe offline when
the link fails or no heartbeat comes for 3 s, and reconnects with capped,
jittered backoff until closed. See :mod:`drivers.shoe.protocol` for the rules.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any, Self

from drivers.lineframe.codec import DecoderStats
from drivers.lineframe.link import BACKOFF_CAP_S, BACKOFF_INITIAL_S, LineLink
from drivers.lineframe.session import HEARTBEAT_TIMEOUT_S
from drivers.shoe.frames import ShoeCommand, ShoeReport, parse_report
from drivers.shoe.protocol import RESEND_TIMEOUT_S, ShoeEvent, ShoeOffline, ShoeProtocol
from drivers.transport import DEFAULT_BAUDRATE

log = logging.getLogger("drivers.shoe")


class ShoeClient:
    """A card-reading shoe on a pyserial URL. Reusable after ``close()``, not re-entrant.

    ``last_n`` is the last read number the controller journaled: a restarted
    controller resumes there, asking only for reads it missed.
    """

    def __init__(
        self,
        url: str,
        *,
        last_n: int = 0,
        baudrate: int = DEFAULT_BAUDRATE,
        heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
        resend_timeout_s: float = RESEND_TIMEOUT_S,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        logger: logging.Logger | None = None,
        **serial_options: Any,
    ) -> None:
        self.protocol = ShoeProtocol(
            last_n, heartbeat_timeout_s=heartbeat_timeout_s, resend_timeout_s=resend_timeout_s
        )
        self._link: LineLink[ShoeReport, ShoeCommand, ShoeEvent] = LineLink(
            url,
            name="shoe",
            parse=parse_report,
            protocol=self.protocol,
            offline_event=ShoeOffline,
            logger=logger or log,
            baudrate=baudrate,
            backoff_initial_s=backoff_initial_s,
            backoff_cap_s=backoff_cap_s,
            serial_options=serial_options,
        )

    @property
    def url(self) -> str:
        return self._link.url

    @property
    def last_n(self) -> int:
        """The last read number handed on (journal it to resume after a restart)."""
        return self.protocol.taken

    @property
    def online(self) -> bool:
        return self._link.online

    @property
    def stats(self) -> DecoderStats:
        """Frames taken and dropped by the decoder, over every connection."""
        return self._link.stats

    @property
    def sessions(self) -> int:
        """Connections opened so far."""
        return self._link.sessions

    async def open(self) -> None:
        await self._link.start()

    async def close(self) -> None:
        await self._link.close()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ShoeEvent:
        return await self._link.next_event()
