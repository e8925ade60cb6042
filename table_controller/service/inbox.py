"""What the table reads from the broker: its own ``ack``, ``replay`` and retained ``status``.

docs/feed.md, "What the table reads": an ``ack`` lets the journal prune what a
recorder has committed; a ``replay`` is answered from the journal with the
original ids and payloads, and what the table no longer holds raises
``REPLAY_UNAVAILABLE`` naming the range. A payload for another table, site or
epoch, or one that does not validate, is ignored: counted, and logged at most
once a minute, never acted on.

docs/feed.md, "One controller per table": the table watches its own retained
``status``. Another instance online that started earlier means this one is the
intruder: it yields (``on_yield``). One that started later will yield, so this
one reconnects at once and says again that it is online.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Final

from pydantic import ValidationError

from table_controller.feed.payloads import TableAck, TableReplay, TableStatus
from table_controller.service.errors import JournalFault
from table_controller.service.journal import OutboxMessage
from table_controller.service.runner import TableRunner

log = logging.getLogger(__name__)
IGNORED_LOG_INTERVAL_S: Final = 60.0


def _ranges(wanted: range, held: set[int]) -> list[tuple[int, int]]:
    """The runs of ``wanted`` missing from ``held``."""
    out: list[tuple[int, int]] = []
    for n in wanted:
        if n in held:
            continue
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


class Inbox:
    """Acts on ack, replay and status messages for this table."""

    def __init__(
        self,
        runner: TableRunner,
        *,
        republish: Callable[[OutboxMessage], None],
        on_yield: Callable[[str], None],
        on_rival_yields: Callable[[], None],
    ) -> None:
        self.runner = runner
        self._republish = republish
        self._on_yield = on_yield
        self._on_rival_yields = on_rival_yields
        prefix = runner.cfg.topic_prefix
        self.topics = (f"{prefix}/ack", f"{prefix}/replay", f"{prefix}/status")
        self.ignored: Counter[str] = Counter()
        self._logged_at = float("-inf")
        self._rival: str | None = None

    def handle(self, topic: str, payload: bytes) -> None:
        kind = topic.rsplit("/", 1)[-1]
        if kind == "status":
            self._status(payload)
            return
        try:
            if kind == "ack":
                self._ack(TableAck.model_validate_json(payload))
            elif kind == "replay":
                self._replay(TableReplay.model_validate_json(payload))
        except ValidationError as exc:
            self._ignore(kind, f"does not validate: {exc.error_count()} errors")

    # -- recorders ---------------------------------------------------------------

    def _ours(self, kind: str, msg: TableAck | TableReplay) -> bool:
        cfg, journal = self.runner.cfg, self.runner.journal
        if msg.table != cfg.table.id or msg.site != cfg.table.site:
            self._ignore(kind, f"for table {msg.table!r} at {msg.site!r}")
            return False
        if msg.epoch != journal.epoch:
            self._ignore(kind, f"for epoch {msg.epoch!r}, not this journal's")
            return False
        return True

    def _ack(self, ack: TableAck) -> None:
        if not self._ours("ack", ack):
            return
        if ack.feed_seq > self.runner.messages.feed_seq:
            self._ignore("ack", f"acknowledges feed_seq {ack.feed_seq}, never sent")
            return
        try:
            self.runner.journal.record_ack(ack.recorder, ack.feed_seq)
        except JournalFault as exc:
            log.warning("ack from %s not journaled: %s", ack.recorder, exc)

    def _replay(self, replay: TableReplay) -> None:
        if not self._ours("replay", replay):
            return
        first, last = replay.from_feed_seq, replay.to_feed_seq
        if last > self.runner.messages.feed_seq:
            # Numbers not handed out yet are not "no longer held": nothing to say of them.
            newest = self.runner.messages.feed_seq
            log.info("replay for %s asks up to %d; the newest is %d", replay.recorder, last, newest)
            last = self.runner.messages.feed_seq
        held = self.runner.journal.feed_range(first, last) if first <= last else []
        for _, msg in held:
            self._republish(msg)
        missing = _ranges(range(first, last + 1), {seq for seq, _ in held})
        log.info(
            "replay %d..%d for %s: %d messages sent again", first, last, replay.recorder, len(held)
        )
        if missing:
            self._unavailable(replay.recorder, missing)

    def _unavailable(self, recorder: str, missing: list[tuple[int, int]]) -> None:
        runs = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in missing)
        message = f"{recorder} asked for feed_seq {runs}: no longer held by the table"
        log.warning("REPLAY_UNAVAILABLE: %s", message)
        self.runner.service_alert("REPLAY_UNAVAILABLE", message, alert=str(uuid.uuid4()))

    def _ignore(self, kind: str, why: str) -> None:
        self.ignored[kind] += 1
        now = time.monotonic()
        if now - self._logged_at >= IGNORED_LOG_INTERVAL_S:
            self._logged_at = now
            log.warning(
                "ignored %s message(s) on this table's topics (%s); last: %s %s",
                sum(self.ignored.values()),
                ", ".join(f"{k} {n}" for k, n in sorted(self.ignored.items())),
                kind,
                why,
            )

    # -- one controller per table ------------------------------------------------

    def _status(self, payload: bytes) -> None:
        try:
            status = TableStatus.model_validate_json(payload)
        except ValidationError:
            self._ignore("status", "does not validate")
            return
        runner = self.runner
        if status.instance is None or status.instance == runner.instance:
            return
        if status.instance in runner.predecessors:
            # This journal's own earlier process, gone (the journal is locked to one
            # process): its retained ``online: true`` outlived it. Say that we are online.
            if status.online:
                runner.enqueue_status()
            return
        if not status.online:
            if self._rival == status.instance:
                # The other one's last will replaced our status: say again that we are online.
                runner.enqueue_status()
            return
        when = "unknown" if status.started is None else status.started.isoformat()
        other = f"instance {status.instance} (started {when})"
        if status.started is None or status.started == runner.started:
            log.warning(
                "another controller runs as this table: %s; cannot tell which started first, "
                "keeping the ordinary back-off",
                other,
            )
            return
        if status.started < runner.started:
            self._on_yield(
                f"table {runner.cfg.table.id} at {runner.cfg.table.site} is already run by "
                f"{other}, which started before this one ({runner.instance}, started "
                f"{runner.started.isoformat()}): this controller yields and exits"
            )
            return
        if self._rival != status.instance:
            self._rival = status.instance
            log.warning("a later controller (%s) runs as this table; it yields", other)
        self._on_rival_yields()
        runner.enqueue_status()
