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
from typing import Any

from drivers.backoff import BACKOFF_CAP_S, BACKOFF_INITIAL_S
from drivers.lineframe.link import LineClient, LineLink
from drivers.lineframe.session import HEARTBEAT_TIMEOUT_S
from drivers.shoe.frames import ShoeCommand, ShoeReport, parse_report
from drivers.shoe.protocol import (
    INFO_RETRY_S,
    RESEND_TIMEOUT_S,
    ShoeEvent,
    ShoeOffline,
    ShoeProtocol,
)
from drivers.transport import DEFAULT_BAUDRATE

log = logging.getLogger("drivers.shoe")


class ShoeClient(LineClient[ShoeReport, ShoeCommand, ShoeEvent]):
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
        info_retry_s: float = INFO_RETRY_S,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        logger: logging.Logger | None = None,
        **serial_options: Any,
    ) -> None:
        self.protocol = ShoeProtocol(
            last_n,
            heartbeat_timeout_s=heartbeat_timeout_s,
            resend_timeout_s=resend_timeout_s,
            info_retry_s=info_retry_s,
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
    def last_n(self) -> int:
        """The last read number handed on (journal it to resume after a restart)."""
        return self.protocol.taken

    @property
    def corrupt_frames(self) -> int:
        """Frames dropped as implausible: good checksum, impossible numbers (docs/devices.md)."""
        return self.protocol.corrupt
