"""The publisher's reconnect policy: capped, jittered back-off and duplicate identities.

A duplicate table identity (another client connecting with our client id) is
reported once through ``on_identity_conflict`` and a logged ERROR, and the
publisher then retries only every ``identity_conflict_retry_s`` instead of
fighting for the session. A broker that says so (DISCONNECT 0x8E, "session
taken over") is believed at once; a broker that just closes the connection
(Mosquitto 2.0.11 does) is suspected after ``PEER_CLOSES_FOR_CONFLICT`` closes
in a row of connections that each came up at the first attempt, since a broker
that is away refuses the reconnect. docs/feed.md's rule for two controllers of one
table (the later yields) is the inbox's (``inbox.py``); this is the fallback
when a controller cannot tell.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from paho.mqtt.packettypes import PacketTypes

from drivers.backoff import backoff_delay
from table_controller.service.mqtt_client import AckingClient, AckTimeout, reason_name

if TYPE_CHECKING:
    from table_controller.service.publisher import BrokerAddress

log = logging.getLogger("table_controller.service.publisher")

RETRY_INITIAL_S: Final = 0.5
RETRY_MAX_S: Final = 30.0
IDENTITY_CONFLICT_RETRY_S: Final = 300.0
# A connection that stays up this long is no longer one of a series of take-overs.
STABLE_CONNECTION_S: Final = 60.0
PEER_CLOSES_FOR_CONFLICT: Final = 3
SESSION_TAKEN_OVER: Final = 0x8E
CONNECTION_LOST: Final = 0x80  # paho's "Unspecified error" for a socket closed under it


class ReconnectPolicy:
    """How long to wait before the next connect, and whether another client has our id."""

    address: BrokerAddress
    client_id: str
    identity_conflict: bool
    _reported_down: bool
    _peer_closes: int
    _lost_sending: bool
    _up_since: float | None
    _retry_initial_s: float
    _retry_max_s: float
    _conflict_retry_s: float
    _rng: random.Random
    _on_identity_conflict: Callable[[str], None]

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        # The service's callbacks only take note; their failure must not stop publishing.
        try:
            callback(*args)
        except Exception:
            log.exception("publisher callback %r failed", callback)

    def _after_loss(
        self,
        client: AckingClient,
        lived: float,
        first_try: bool,
        error: BaseException | None,
    ) -> float:
        code = client.disconnect_reason
        if not self._reported_down:
            self._reported_down = True
            if code is None or (code == 0 and not client.disconnect_from_broker and error):
                # No reason from the broker (or only our own clean DISCONNECT after
                # giving up on it): what made us give up says why.
                why = str(error)
            else:
                why = reason_name(code, PacketTypes.DISCONNECT)
            log.warning("lost the broker connection (%s); reconnecting", why)
        if lived >= STABLE_CONNECTION_S:
            if self.identity_conflict:
                log.info("no other client has taken the session for %.0f s", lived)
            self.identity_conflict = False
            self._peer_closes = 0
        if client.disconnect_from_broker and code == SESSION_TAKEN_OVER:
            return self._conflict("the broker handed our session to another client (0x8E)")
        closed_under_us = (
            code == CONNECTION_LOST
            and not client.disconnect_from_broker
            and not isinstance(error, AckTimeout)
        )
        if closed_under_us and self._lost_sending:
            # Closed over a message we sent, more likely than by a rival: no verdict.
            pass
        elif closed_under_us and lived < STABLE_CONNECTION_S:
            if self.identity_conflict:
                return self._conflict("the broker closed the connection again")
            self._peer_closes = self._peer_closes + 1 if first_try else 1
            if self._peer_closes >= PEER_CLOSES_FOR_CONFLICT:
                return self._conflict(
                    f"the broker closed {self._peer_closes} connections in a row, each "
                    "right after it accepted the next one"
                )
        elif closed_under_us:
            self._peer_closes = 1
        else:
            self._peer_closes = 0
        return self._backoff(1)

    def _conflict(self, how: str) -> float:
        if not self.identity_conflict:
            self.identity_conflict = True
            detail = (
                f"another client is connected as {self.client_id!r}: {how}; "
                f"retrying every {self._conflict_retry_s:.0f} s instead of fighting for "
                "the session (is this table id configured twice?)"
            )
            log.error("duplicate table identity: %s", detail)
            self._call(self._on_identity_conflict, detail)
        self._peer_closes = 0
        return self._conflict_retry_s * self._rng.uniform(0.9, 1.1)

    def _backoff(self, attempt: int) -> float:
        # The project's one reconnect backoff (``attempt`` here counts from 1).
        return backoff_delay(
            attempt - 1, initial_s=self._retry_initial_s, cap_s=self._retry_max_s, rng=self._rng
        )

    def _log_failed_connect(self, error: BaseException | None, attempt: int) -> None:
        if not self._reported_down:
            self._reported_down = True
            log.warning(
                "cannot connect to the broker at %s:%d: %s; retrying",
                self.address.host,
                self.address.port,
                error,
            )
        else:
            log.debug("connect attempt %d failed: %s", attempt, error)

    def _check_stable(self) -> None:
        if (
            self.identity_conflict
            and self._up_since is not None
            and time.monotonic() - self._up_since >= STABLE_CONNECTION_S
        ):
            log.info("no other client has taken the session for %.0f s", STABLE_CONNECTION_S)
            self.identity_conflict = False
