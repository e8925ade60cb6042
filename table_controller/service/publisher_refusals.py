"""Refusals: what the broker would not take, and what waits before it goes again.

* A PUBACK reason code of 0x80 or above refuses a message: it stays in the
  outbox, held back for a while (``Journal.mark_refused``), and ``on_refused``
  fires once per message id. When the journal cannot record the refusal (a full
  disk) the message is held back here instead, for the same delays, so that it
  is not sent again at once, over and over.
* A DISCONNECT naming a reason that refuses the PUBLISH being read refuses the
  message at the head of the in-flight window; a message alone in flight at
  ``POISON_LOSSES`` plain drops in a row counts as refused.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from table_controller.service.errors import JournalFault
from table_controller.service.journal import Journal
from table_controller.service.mqtt_client import reason_name
from table_controller.service.outbox import OutboxMessage
from table_controller.service.publisher_links import ReconnectPolicy

log = logging.getLogger("table_controller.service.publisher")

REFUSAL_MIN: Final = 0x80  # MQTT 5: a reason code of 0x80 or above is a failure
IMPLEMENTATION_ERROR: Final = 0x83  # used for a message paho-mqtt refuses to encode
# DISCONNECT reason codes that refuse the PUBLISH the broker was reading: the
# message at the head of the in-flight window is the one it refused.
MESSAGE_REFUSALS: Final = frozenset({0x87, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B})
# A message alone in flight when the connection dropped this many times in a
# row is taken as refused, so that it cannot block the outbox forever.
POISON_LOSSES: Final = 3


class Refusals(ReconnectPolicy):
    """The drain's refusals and the waits they impose."""

    _journal: Journal
    _on_refused: Callable[[OutboxMessage, int], None]
    _from_memory: set[str]
    _unmarked: set[str]  # acknowledged, but the journal could not mark them sent
    _held: dict[str, tuple[int, float]]  # refused, unjournaled: refusals, monotonic retry
    _refused_topics: set[str]

    def _not_now(self) -> set[str]:
        """Ids in the outbox not to send now: acknowledged but not marked, and refused
        while the journal could not hold them back (held here until their retry)."""
        now = time.monotonic()
        return self._unmarked | {i for i, (_, until) in self._held.items() if until > now}

    def _retry_timeout(self) -> float | None:
        at = self._journal.next_retry_at()
        now = time.monotonic()
        waits = [until - now for _, until in self._held.values() if until > now]
        if at is not None:
            waits.append(max(0.0, (at - datetime.now(UTC)).total_seconds()))
        # A little past the retry time, so that the message is due when we look.
        return min(waits) + 0.01 if waits else None

    def _refused(self, msg: OutboxMessage, code: int) -> None:
        if msg.id in self._from_memory:
            # Not in the journal (a view, or sent while it could not commit): reported
            # once per topic. A view goes again as the next one of its topic, which the
            # table builds at its next change and at every connect; a fault's alert is
            # journaled, and so sent again, once commits succeed.
            first = msg.topic not in self._refused_topics
            self._refused_topics.add(msg.topic)
            where = (
                "it goes again with the next one on its topic"
                if msg.retain
                else "it goes again from the journal once it commits"
            )
        else:
            where = "it stays in the outbox"
            try:
                first = self._journal.mark_refused(msg.id, code)
                self._held.pop(msg.id, None)
            except JournalFault as exc:
                # Held back here instead, as the journal would (not sent again at once).
                count = self._held.get(msg.id, (0, 0.0))[0] + 1
                self._held[msg.id] = (count, time.monotonic() + self._journal.retry_delay(count))
                log.debug("refusal not journaled: %s", exc)
                first = False
        if first:
            log.warning(
                "the broker refused message %s on %s: %s; %s",
                msg.id,
                msg.topic,
                reason_name(code),
                where,
            )
            self._call(self._on_refused, msg, code)
        else:
            log.debug("message %s refused again: %s", msg.id, reason_name(code))
