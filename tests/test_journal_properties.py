"""Properties of the outbox under any sequence of operations: nothing lost, order kept,
retained coalescing never drops a non-retained message, refusals held back, reopening
changes nothing."""

from __future__ import annotations

import json
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from table_controller.service.journal import Journal, OutboxMessage

PREFIX = "casino/main-floor/table/war-07"
KINDS = ("status", "state", "stats", "events", "rounds", "alerts")
RETAINED = {"status", "state", "stats"}
BASE_S, MAX_S = 2.0, 8.0
FAR = datetime(2100, 1, 1, tzinfo=UTC)


class OutboxMachine(RuleBasedStateMachine):
    """The journal against a plain model of what it must hold."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="journal-machine-"))
        self.path = self.dir / "j.sqlite3"
        self.journal = self._open()
        self.epoch = self.journal.epoch
        self.clock = datetime(2025, 3, 1, 20, 0, tzinfo=UTC)
        self.made = 0
        self.inputs: list[dict[str, int]] = []
        self.enqueued: list[OutboxMessage] = []
        self.sent: set[str] = set()
        self.replaced: set[str] = set()
        self.refusals: dict[str, int] = {}
        self.retry_at: dict[str, datetime] = {}

    def _open(self) -> Journal:
        return Journal(self.path, refused_retry_base_s=BASE_S, refused_retry_max_s=MAX_S)

    def teardown(self) -> None:
        self.journal.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the model -----------------------------------------------------------------

    def _make(self, kinds: list[str]) -> list[OutboxMessage]:
        out = []
        for kind in kinds:
            self.made += 1
            out.append(
                OutboxMessage(
                    id=f"m{self.made}",
                    topic=f"{PREFIX}/{kind}",
                    payload=json.dumps({"id": f"m{self.made}"}).encode(),
                    qos=1,
                    retain=kind in RETAINED,
                )
            )
        return out

    def _enqueued(self, messages: list[OutboxMessage]) -> None:
        for m in messages:
            if m.retain:
                # Only an unsent value of the same retained topic is replaced.
                for old in self.enqueued:
                    if (
                        old.retain
                        and old.topic == m.topic
                        and old.id not in self.sent
                        and old.id not in self.replaced
                    ):
                        self.replaced.add(old.id)
            self.enqueued.append(m)

    def _unsent(self) -> list[OutboxMessage]:
        return [m for m in self.enqueued if m.id not in self.sent and m.id not in self.replaced]

    def _due(self) -> list[OutboxMessage]:
        return [
            m
            for m in self._unsent()
            if m.id not in self.retry_at or self.retry_at[m.id] <= self.clock
        ]

    # -- operations ----------------------------------------------------------------

    @initialize()
    def fresh(self) -> None:
        assert self.journal.outbox_depth() == 0

    @rule(kinds=st.lists(st.sampled_from(KINDS), max_size=5), value=st.integers(-5, 5))
    def record(self, kinds: list[str], value: int) -> None:
        messages = self._make(kinds)
        inp = {"k": len(self.inputs), "v": value}
        n = self.journal.record(inp, messages, now=self.clock)
        assert n == len(self.inputs) + 1
        self.inputs.append(inp)
        self._enqueued(messages)

    @rule(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=3))
    def enqueue(self, kinds: list[str]) -> None:
        messages = self._make(kinds)
        self.journal.enqueue(messages, now=self.clock)
        self._enqueued(messages)

    @rule(data=st.data(), limit=st.integers(1, 8))
    def publish_some(self, data: st.DataObject, limit: int) -> None:
        batch = self.journal.pending(limit, now=self.clock)
        assert batch == self._due()[:limit]
        acked = data.draw(st.lists(st.sampled_from(batch), unique=True) if batch else st.just([]))
        self.journal.mark_sent([m.id for m in acked], now=self.clock)
        self.sent |= {m.id for m in acked}
        for m in acked:
            self.retry_at.pop(m.id, None)

    @precondition(lambda self: bool(self.replaced))
    @rule(data=st.data())
    def ack_a_replaced_message(self, data: st.DataObject) -> None:
        # It was on its way when a newer value replaced it: the ack changes nothing.
        stale = data.draw(st.sampled_from(sorted(self.replaced)))
        self.journal.mark_sent([stale], now=self.clock)

    @rule(data=st.data(), code=st.sampled_from([0x80, 0x87, 0x97]))
    def refuse_one(self, data: st.DataObject, code: int) -> None:
        batch = self.journal.pending(5, now=self.clock)
        if not batch:
            return
        victim = data.draw(st.sampled_from(batch))
        first = self.journal.mark_refused(victim.id, code, now=self.clock)
        count = self.refusals.get(victim.id, 0) + 1
        assert first == (count == 1)
        self.refusals[victim.id] = count
        self.retry_at[victim.id] = self.clock + timedelta(
            seconds=min(MAX_S, BASE_S * 2 ** (count - 1))
        )

    @rule(seconds=st.floats(0, 10, allow_nan=False))
    def time_passes(self, seconds: float) -> None:
        self.clock += timedelta(seconds=seconds)

    @rule()
    def reopen(self) -> None:
        self.journal.close()
        self.journal = self._open()
        assert self.journal.epoch == self.epoch

    # -- what must always hold ---------------------------------------------------------

    @invariant()
    def inputs_replay_in_order(self) -> None:
        assert list(self.journal.inputs()) == self.inputs

    @invariant()
    def order_is_kept_and_nothing_is_lost(self) -> None:
        unsent = self.journal.pending(10_000, now=FAR)
        assert unsent == self._unsent()
        assert self.journal.outbox_depth() == len(unsent)
        # Every non-retained message is either acknowledged or still waiting.
        waiting = {m.id for m in unsent}
        for m in self.enqueued:
            if not m.retain:
                assert m.id in self.sent or m.id in waiting

    @invariant()
    def at_most_the_latest_value_of_a_retained_topic_waits(self) -> None:
        unsent = self.journal.pending(10_000, now=FAR)
        for kind in RETAINED:
            topic = f"{PREFIX}/{kind}"
            waiting = [m for m in unsent if m.topic == topic]
            latest = [m for m in self.enqueued if m.topic == topic][-1:]
            assert waiting in ([], latest)
            # Of the values sent, the last one is kept.
            sent = [m for m in self.enqueued if m.topic == topic and m.id in self.sent]
            assert self.journal.sent_messages(kind, 100) == sent[-1:]

    @invariant()
    def sent_records_are_kept_in_order(self) -> None:
        sent = self.journal.sent_messages("rounds", 10_000)
        assert sent == [m for m in self.enqueued if m.id in self.sent and m.kind == "rounds"]

    @invariant()
    def refusals_are_remembered(self) -> None:
        held = {r.message.id: r.count for r in self.journal.refusals()}
        expected = {
            i: c for i, c in self.refusals.items() if i not in self.sent and i not in self.replaced
        }
        assert held == expected


OutboxMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestOutbox = OutboxMachine.TestCase
