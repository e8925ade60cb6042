"""The feed through a journal fault (docs/rules.md ``JOURNAL_FAULT``, docs/feed.md ``feed_seq``):
on a real full disk, every alert the table raises about it is journaled once commits succeed
again, whichever commit succeeds first; ``feed_seq`` stays one unbroken run, one number per
message; and a fault in a later process is a new alert, never an id the journal already holds."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from table_controller.engine import stats_view
from table_controller.engine.inputs import (
    CardRead,
    DeviceOffline,
    DeviceOnline,
    PressesRenumbered,
    SpotsChanged,
)
from table_controller.feed.payloads import parse_payload
from table_controller.service.inbox import Inbox
from table_controller.service.journal import Journal
from table_controller.service.outbox import OutboxMessage
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, fill, session


def runner_on(path: Path) -> TableRunner:
    return TableRunner(config(path), Journal(path))


def journaled(runner: TableRunner) -> list[dict[str, Any]]:
    """Every feed message the journal holds (sent or not), in outbox order."""
    rows = runner.journal.feed_range(1, runner.messages.feed_seq + 10)
    return [json.loads(msg.payload) for _, msg in rows]


def fault_alerts(
    messages: list[dict[str, Any]], schema: str = "table-alert/1"
) -> list[dict[str, Any]]:
    """The JOURNAL_FAULT messages on the ``alerts`` topic (or, by ``schema``, the events)."""
    return [m for m in messages if m.get("code") == "JOURNAL_FAULT" and m["schema"] == schema]


def up_to_the_deal(runner: TableRunner) -> Iterator[CardRead]:
    """Feed the first round up to its first card; yield that card and the ones after it."""
    inputs = session(2)
    deal = next(i for i, inp in enumerate(inputs) if isinstance(inp, CardRead))
    for inp in inputs[:deal]:
        assert runner.handle(inp)
    yield from (inp for inp in inputs[deal:] if isinstance(inp, CardRead))


def layout_again() -> SpotsChanged:
    """The board's snapshot of the layout as it stands: an input that changes nothing."""
    inputs = session(2)
    deal = next(i for i, inp in enumerate(inputs) if isinstance(inp, CardRead))
    return next(i for i in reversed(inputs[:deal]) if isinstance(i, SpotsChanged))


def assert_one_run(messages: list[dict[str, Any]]) -> None:
    seqs = [m["feed_seq"] for m in messages]
    assert seqs == list(range(1, len(seqs) + 1))
    assert len({m["id"] for m in messages}) == len(messages)


def test_a_fault_ended_by_the_next_input_journals_its_raised_alert(small_disk: Path) -> None:
    runner = runner_on(small_disk / "j.sqlite3")
    try:
        card = next(up_to_the_deal(runner))
        filler = fill(small_disk)
        assert not runner.handle(card)
        filler.unlink()
        # The board's next snapshot, not the fault task, is the first commit to succeed.
        assert runner.handle(dataclasses.replace(layout_again(), at=card.at))
        assert runner.fault is None
        messages = journaled(runner)
        alerts = fault_alerts(messages)
        assert [a["resolved_by"] for a in alerts] == [None, "JOURNAL"]
        assert alerts[0]["alert"] == alerts[1]["alert"]
        # As every alert: an `alert` event each, and counted in the stats.
        events = fault_alerts(messages, "table-event/1")
        assert [(e["type"], e["alert"], e["resolved_by"]) for e in events] == [
            ("alert", a["alert"], a["resolved_by"]) for a in alerts
        ]
        assert stats_view(runner.engine.snapshot())["alerts_by_code"] == {"JOURNAL_FAULT": 1}
        assert_one_run(messages)
    finally:
        runner.journal.close()


def test_a_fault_is_in_its_rounds_record_and_in_the_stats_after_a_restart(
    small_disk: Path,
) -> None:
    path = small_disk / "j.sqlite3"
    runner = runner_on(path)
    try:
        inputs = session(2)
        deal = next(i for i, inp in enumerate(inputs) if isinstance(inp, CardRead))
        for inp in inputs[:deal]:
            assert runner.handle(inp)
        filler = fill(small_disk)
        assert not runner.handle(inputs[deal])
        filler.unlink()
        assert runner.retry_journal()
        runner.shoe_resync.clear()  # the shoe task reopens the shoe: the reads come again
        for inp in inputs[deal:]:
            assert runner.handle(inp)
        messages = journaled(runner)
        (raised, _) = fault_alerts(messages)
        first = next(m for m in messages if m["schema"] == "war-round/1")
        assert raised["alert"] in first["alerts"]
        counted = stats_view(runner.engine.snapshot())["alerts_by_code"]
    finally:
        runner.journal.close()
    assert counted["JOURNAL_FAULT"] == 1
    again = runner_on(path)  # rebuilt from the journal, as at any start
    try:
        assert stats_view(again.engine.snapshot())["alerts_by_code"] == counted
    finally:
        again.journal.close()


def test_a_fault_in_a_later_process_is_a_new_alert(small_disk: Path) -> None:
    path = small_disk / "j.sqlite3"
    runner = runner_on(path)
    card: CardRead | None = None
    for process in range(2):
        if process:
            runner = runner_on(path)
        try:
            card = card or next(up_to_the_deal(runner))
            filler = fill(small_disk)
            assert not runner.handle(dataclasses.replace(card))
            filler.unlink()
            assert runner.retry_journal()
        finally:
            runner.journal.close()
    reader = Journal(path, readonly=True)
    try:
        rows = reader.feed_range(1, 10_000)
    finally:
        reader.close()
    messages = [json.loads(msg.payload) for _, msg in rows]
    alerts = fault_alerts(messages)
    assert [a["resolved_by"] for a in alerts] == [None, "JOURNAL", None, "JOURNAL"]
    assert alerts[0]["alert"] == alerts[1]["alert"] != alerts[2]["alert"] == alerts[3]["alert"]
    assert len({a["id"] for a in alerts}) == 4
    assert_one_run(messages)


def test_a_disk_that_fills_again_at_once_leaves_no_gap_in_feed_seq(small_disk: Path) -> None:
    runner = runner_on(small_disk / "j.sqlite3")
    sent: list[OutboxMessage] = []
    runner.publish_unjournaled = sent.append
    try:
        cards = up_to_the_deal(runner)
        card = next(cards)
        filler = fill(small_disk)
        assert not runner.handle(card)
        filler.unlink()
        fillers: list[Path] = []
        record = runner.journal.record

        def record_then_refill(
            input_json: Mapping[str, Any],
            messages: Sequence[OutboxMessage],
            *,
            now: datetime | None = None,
        ) -> int:
            number = record(input_json, messages, now=now)
            # The owed alert's commit went through (the first, once the disk is back); the
            # disk is full again before the next one, the fault's resolution.
            if input_json["type"] == "service_alert" and not fillers:
                fillers.append(fill(small_disk))
            return number

        runner.journal.record = record_then_refill  # type: ignore[method-assign]
        assert not runner.handle(dataclasses.replace(layout_again(), at=card.at))
        # The resolution could not be journaled: the fault goes on, and nothing said its end.
        assert fillers
        assert runner.fault is not None
        assert not [m for m in sent if json.loads(m.payload).get("resolved_by")]
        fillers[0].unlink()
        assert runner.retry_journal()
        runner.shoe_resync.clear()  # the shoe task reopens the shoe: the reads come again
        assert runner.handle(card)
        messages = journaled(runner)
        alerts = fault_alerts(messages)
        # The one fault journaled, raised and resolved, and no number skipped.
        assert [a["resolved_by"] for a in alerts] == [None, "JOURNAL"]
        assert alerts[0]["alert"] == alerts[1]["alert"]
        assert_one_run(messages)
    finally:
        runner.journal.close()


def test_replay_unavailable_during_a_fault_shares_no_feed_seq(small_disk: Path) -> None:
    runner = runner_on(small_disk / "j.sqlite3")
    sent: list[OutboxMessage] = []
    runner.publish_unjournaled = sent.append
    inbox = Inbox(runner, republish=sent.append, on_yield=print, on_rival_yields=lambda: None)
    try:
        cards = up_to_the_deal(runner)
        card = next(cards)
        # The first message is no longer held (as if pruned).
        runner.journal._db.execute("DELETE FROM outbox WHERE feed_seq = 1")
        filler = fill(small_disk)
        assert not runner.handle(card)
        last = runner.messages.feed_seq
        replay = {
            "schema": "table-replay/1",
            "id": "5b0c3f43-5d0e-4d35-9b1c-5e3c6f5f2a11",
            "table": "war-07",
            "site": "main-floor",
            "ts": "2026-12-02T03:00:00.000Z",
            "recorder": "rec-1",
            "epoch": runner.journal.epoch,
            "from_feed_seq": 1,
            "to_feed_seq": last,
        }
        inbox.handle(f"{runner.cfg.topic_prefix}/replay", json.dumps(replay).encode())
        filler.unlink()
        assert runner.retry_journal()
        runner.shoe_resync.clear()  # the shoe task reopens the shoe: the reads come again
        assert runner.handle(card)
        messages = journaled(runner)
        unavailable = [m for m in messages if m.get("code") == "REPLAY_UNAVAILABLE"]
        # Its `alerts` message and its `alert` event, counted in the stats as every alert.
        assert sorted(m["schema"] for m in unavailable) == ["table-alert/1", "table-event/1"]
        assert stats_view(runner.engine.snapshot())["alerts_by_code"] == {
            "JOURNAL_FAULT": 1,
            "REPLAY_UNAVAILABLE": 1,
        }
        # What went out from memory during the fault carries no number another message has.
        numbers = {m["feed_seq"] for m in messages}
        for msg in sent:
            body = parse_payload(msg.payload).model_dump()
            if body.get("feed_seq") is not None:
                match = [m for m in messages if m["feed_seq"] == body["feed_seq"]]
                assert match, body
                assert match[0]["id"] == body["id"], body
        assert numbers == set(range(2, len(messages) + 2))
    finally:
        runner.journal.close()


def test_replay_beyond_the_newest_feed_seq_claims_nothing_unheld(tmp_path: Path) -> None:
    runner = runner_on(tmp_path / "j.sqlite3")
    sent: list[OutboxMessage] = []
    inbox = Inbox(runner, republish=sent.append, on_yield=print, on_rival_yields=lambda: None)
    try:
        for inp in session(1)[:30]:
            runner.handle(inp)
        last = runner.messages.feed_seq
        assert last > 0
        replay = {
            "schema": "table-replay/1",
            "id": "5b0c3f43-5d0e-4d35-9b1c-5e3c6f5f2a12",
            "table": "war-07",
            "site": "main-floor",
            "ts": "2026-12-02T03:00:00.000Z",
            "recorder": "rec-1",
            "epoch": runner.journal.epoch,
            "from_feed_seq": last,
            "to_feed_seq": last + 50,
        }
        inbox.handle(f"{runner.cfg.topic_prefix}/replay", json.dumps(replay).encode())
        assert [json.loads(m.payload)["feed_seq"] for m in sent] == [last]
        codes = [m.get("code") for m in journaled(runner)]
        assert "REPLAY_UNAVAILABLE" not in codes
    finally:
        runner.journal.close()


def test_a_read_after_the_disk_is_back_waits_for_the_reads_refused_before_it(
    small_disk: Path,
) -> None:
    """Reads refused during a fault come back by RESEND, in order: a later read that comes
    first, before the fault task's retry, is not taken ahead of them (it comes again too)."""
    runner = runner_on(small_disk / "j.sqlite3")
    try:
        cards = up_to_the_deal(runner)
        refused, later = next(cards), next(cards)
        last = runner.engine.last_read_n
        filler = fill(small_disk)
        assert not runner.handle(refused)
        filler.unlink()
        assert not runner.handle(later)
        assert runner.fault is None  # the disk is back: that read ended the fault
        assert runner.engine.last_read_n == last
        assert runner.shoe_resync.is_set()  # the shoe is asked again from the last journaled
        assert not runner.handle(dataclasses.replace(later))  # until the shoe is reopened
        runner.shoe_resync.clear()  # the shoe task reopens the shoe: the reads come in order
        assert runner.handle(dataclasses.replace(refused))
        assert runner.handle(dataclasses.replace(later))
        assert runner.engine.last_read_n == later.n
    finally:
        runner.journal.close()


def test_a_snapshot_taken_after_a_fault_is_not_undone_by_the_one_it_refused(
    small_disk: Path,
) -> None:
    """The snapshot refused during the fault is fed again when it ends, unless a newer one
    was taken meanwhile: the board's latest layout is the one the table keeps."""
    runner = runner_on(small_disk / "j.sqlite3")
    try:
        older = next(i for i in session(1) if isinstance(i, SpotsChanged) and i.present)
        # The player took the chips back meanwhile: the board's next snapshot is empty.
        newer = dataclasses.replace(older, present=0, values=None if older.values is None else ())
        filler = fill(small_disk)
        assert not runner.handle(older)
        filler.unlink()
        assert runner.handle(newer)
        assert runner.fault is None
        present = runner.engine.snapshot().spots.present
        assert present == newer.present
    finally:
        runner.journal.close()


def test_a_device_lost_or_back_during_a_fault_is_taken_when_it_ends(small_disk: Path) -> None:
    """The drivers say once that a device went or came back: a fault must not lose it."""
    runner = runner_on(small_disk / "j.sqlite3")
    try:
        card = next(up_to_the_deal(runner))
        filler = fill(small_disk)
        assert not runner.handle(DeviceOffline(at=card.at, device="console", detail="unplugged"))
        assert not runner.handle(DeviceOffline(at=card.at, device="sensors", detail="unplugged"))
        assert not runner.handle(DeviceOnline(at=card.at, device="sensors"))  # back already
        assert not runner.handle(PressesRenumbered(at=card.at))  # the console restarted
        filler.unlink()
        assert runner.retry_journal()
        devices = runner.device_status()
        assert devices["console"]["state"] == "offline"
        assert devices["sensors"]["state"] != "offline"
        codes = {a.code.value for a in runner.engine.snapshot().alerts.open}
        assert "DEVICE_OFFLINE" in codes
        kinds = [body.get("type") for body in runner.journal.inputs()]
        assert "console_restarted" in kinds
    finally:
        runner.journal.close()


def test_a_status_built_once_the_table_is_stopping_says_offline(small_disk: Path) -> None:
    """A journal fault raised during a stop (a device closing, say) sends a status from
    memory: it must not put back the "online" the stop's final status replaced."""
    runner = runner_on(small_disk / "j.sqlite3")
    offered: list[OutboxMessage] = []
    runner.publish_unjournaled = offered.append
    try:
        card = next(up_to_the_deal(runner))
        runner.stopping = True
        filler = fill(small_disk)
        assert not runner.handle(DeviceOffline(at=card.at, device="shoe", detail="closing"))
        filler.unlink()
        statuses = [json.loads(m.payload) for m in offered if m.topic.endswith("/status")]
        assert statuses
        assert all(s["online"] is False for s in statuses)
    finally:
        runner.journal.close()
