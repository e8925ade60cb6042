"""The dealer console as an async context manager and an async iterator of events.

::

    async with ConsoleClient("socket://127.0.0.1:7002") as console:
        async for event in console:
            if isinstance(event, ButtonPressed):
                await console.ack(event.k)   # or nak(event.k, NakReason.NOT_NOW)

The client does not decide answers (the game does); it hands on every press
that arrives, presses sent again after a reconnect included, and the game
answers those with the answer it remembers. It reports the console offline
when the link fails or no heartbeat comes for 3 s, and reconnects with
capped, jittered backoff until closed.
"""

from __future__ import annotations

import logging
from typing import Any

from drivers.backoff import BACKOFF_CAP_S, BACKOFF_INITIAL_S
from drivers.console.frames import (
    AckFrame,
    ConsoleCommand,
    ConsoleReport,
    NakFrame,
    ShowFrame,
    fit_show_text,
    parse_report,
)
from drivers.console.protocol import ConsoleEvent, ConsoleOffline, ConsoleProtocol
from drivers.lineframe.link import LineClient, LineLink
from drivers.lineframe.session import HEARTBEAT_TIMEOUT_S
from drivers.transport import DEFAULT_BAUDRATE

log = logging.getLogger("drivers.console")


class ConsoleClient(LineClient[ConsoleReport, ConsoleCommand, ConsoleEvent]):
    """A dealer console on a pyserial URL. Reusable after ``close()``, not re-entrant.

    ``last_answered`` is the highest press number answered before a controller
    restart (from the journal), so that a console restart is still recognised.
    """

    def __init__(
        self,
        url: str,
        *,
        last_answered: int = 0,
        baudrate: int = DEFAULT_BAUDRATE,
        heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        logger: logging.Logger | None = None,
        **serial_options: Any,
    ) -> None:
        self.protocol = ConsoleProtocol(last_answered, heartbeat_timeout_s=heartbeat_timeout_s)
        self._link: LineLink[ConsoleReport, ConsoleCommand, ConsoleEvent] = LineLink(
            url,
            name="console",
            parse=parse_report,
            protocol=self.protocol,
            offline_event=ConsoleOffline,
            logger=logger or log,
            baudrate=baudrate,
            backoff_initial_s=backoff_initial_s,
            backoff_cap_s=backoff_cap_s,
            serial_options=serial_options,
        )

    async def ack(self, k: int) -> None:
        """Accept press ``k``. TransportError while the console is offline: it sends the
        press again when it is back, and the same answer is due then."""
        self._link.send(AckFrame(k))
        self.protocol.answered(k)

    async def nak(self, k: int, reason: str) -> None:
        """Refuse press ``k`` with an upper-case reason code (``NakReason`` or another).

        ValueError for a reason that is not such a code; TransportError as for ``ack``.
        """
        self._link.send(NakFrame(k, reason))
        self.protocol.answered(k)

    async def show(self, text: str) -> None:
        """Put a line on the console's display, cut to fit one frame; TransportError if
        the console is offline (the line is not kept)."""
        self._link.send(ShowFrame(fit_show_text(text)))
