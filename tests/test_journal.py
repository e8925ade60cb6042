"""The journal and outbox: replay order, one transaction per input, retained coalescing,
refusals held back, and surviving a killed process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from table_controller.service.journal import (
    DuplicateMessageId,
    Journal,
    JournalError,
    OutboxMessage,
)

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2025, 3, 1, 20, 0, tzinfo=UTC)
PREFIX = "casino/main-floor/table/war-07"


def msg(id: str, kind: str = "events", *, retain: bool | None = None) -> OutboxMessage:
    retained = kind in ("status", "state", "stats") if retain is None else retain
    return OutboxMessage(
        id=id,
        topic=f"{PREFIX}/{kind}",
        payload=json.dumps({"id": id, "kind": kind}).encode(),
        qos=1,
        retain=retained,
    )


def ids(messages: list[OutboxMessage]) -> list[str]:
    return [m.id for m in messages]


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = Journal(tmp_path / "table.sqlite3", refused_retry_base_s=5.0, refused_retry_max_s=40.0)
    yield j
    j.close()


def test_inputs_replay_in_order_with_their_numbers(journal: Journal) -> None:
    inputs = [{"type": "card", "n": i, "card": "AS", "note": "ü"} for i in range(1, 8)]
    numbers = [journal.record(inp, []) for inp in inputs]
    assert numbers == list(range(1, 8))
    assert list(journal.inputs()) == inputs
    assert list(journal.inputs(after=5)) == inputs[5:]
    assert [n for n, _ in journal.numbered_inputs(after=2)] == [3, 4, 5, 6, 7]
    assert journal.last_input_number() == 7


def test_a_long_journal_replays_across_chunks(journal: Journal) -> None:
    # Replay reads 256 inputs at a time: two whole chunks and a bit.
    for i in range(513):
        journal.record({"i": i}, [])
    assert [inp["i"] for inp in journal.inputs()] == list(range(513))


def test_an_input_and_its_messages_commit_together_or_not_at_all(journal: Journal) -> None:
    journal.record({"i": 1}, [msg("a"), msg("b")])
    with pytest.raises(DuplicateMessageId, match="'a'"):
        journal.record({"i": 2}, [msg("c"), msg("a")])
    with pytest.raises(ValueError, match="Out of range float"):
        journal.record({"i": 3, "x": float("nan")}, [msg("d")])
    with pytest.raises(TypeError):
        journal.record({"i": 4, "x": object()}, [msg("e")])
    assert list(journal.inputs()) == [{"i": 1}]
    assert ids(journal.pending()) == ["a", "b"]
    assert journal.last_input_number() == 1


def test_pending_keeps_the_order_of_enqueueing(journal: Journal) -> None:
    journal.record({"i": 1}, [msg("e1"), msg("r1", "rounds")])
    journal.enqueue([msg("a1", "alerts")])
    journal.record({"i": 2}, [msg("e2")])
    assert ids(journal.pending()) == ["e1", "r1", "a1", "e2"]
    assert ids(journal.pending(limit=2)) == ["e1", "r1"]
    journal.mark_sent(["e1", "r1"])
    assert ids(journal.pending()) == ["a1", "e2"]
    assert journal.outbox_depth() == 2


def test_a_newer_retained_value_replaces_the_unsent_one_and_takes_a_newer_place(
    journal: Journal,
) -> None:
    journal.enqueue([msg("s1", "status"), msg("e1"), msg("st1", "state")])
    journal.record({"i": 1}, [msg("e2"), msg("s2", "status")])
    # s1 is gone, s2 comes after e2: never ahead of the events that led to it.
    assert ids(journal.pending()) == ["e1", "st1", "e2", "s2"]
    journal.enqueue([msg("s3", "status"), msg("s4", "status")])
    assert ids(journal.pending()) == ["e1", "st1", "e2", "s4"]
    # A value already sent is not touched by a newer one.
    journal.mark_sent(["e1", "st1"])
    journal.enqueue([msg("st2", "state")])
    assert ids(journal.pending()) == ["e2", "s4", "st2"]
    assert ids(journal.sent_messages("state", 10)) == ["st1"]


def test_non_retained_messages_on_retained_looking_topics_are_not_coalesced(
    journal: Journal,
) -> None:
    journal.enqueue([msg("x1", "status", retain=False), msg("x2", "status", retain=False)])
    assert ids(journal.pending()) == ["x1", "x2"]


def test_marking_sent_ignores_unknown_and_replaced_messages(journal: Journal) -> None:
    journal.enqueue([msg("s1", "status"), msg("e1")])
    in_flight = journal.pending()
    journal.enqueue([msg("s2", "status")])  # s1 replaced while it was on its way
    journal.mark_sent([*ids(in_flight), "nope"])
    journal.mark_sent(["e1"])  # twice is harmless
    assert ids(journal.pending()) == ["s2"]
    assert ids(journal.sent_messages("events", 10)) == ["e1"]
    assert journal.sent_messages("status", 10) == []


def test_sent_retained_values_are_pruned_to_the_last(journal: Journal) -> None:
    for i in range(5):
        journal.enqueue([msg(f"s{i}", "status")])
        journal.mark_sent([f"s{i}"])
    assert ids(journal.sent_messages("status", 10)) == ["s4"]


def test_sent_messages_are_the_last_ones_oldest_first(journal: Journal) -> None:
    records = [msg(f"r{i}", "rounds") for i in range(6)]
    journal.enqueue([*records, msg("e")])
    journal.mark_sent(ids(records[:5]))
    assert journal.sent_messages("rounds", 3) == records[2:5]
    assert journal.sent_messages("rounds", 100) == records[:5]
    with pytest.raises(ValueError, match="last topic level"):
        journal.sent_messages("table/war-07/rounds", 3)


def test_a_refused_message_is_held_back_while_the_rest_flows(journal: Journal) -> None:
    journal.enqueue([msg("e1"), msg("a1", "alerts"), msg("e2")])
    assert journal.mark_refused("a1", 0x87, now=T0) is True
    assert ids(journal.pending(now=T0)) == ["e1", "e2"]
    assert journal.outbox_depth() == 3
    assert journal.next_retry_at() == T0 + timedelta(seconds=5)
    # Due again: offered in its own place.
    assert ids(journal.pending(now=T0 + timedelta(seconds=5))) == ["e1", "a1", "e2"]
    # Each refusal doubles the wait, up to the cap; only the first one is "new".
    waits = []
    at = T0
    for _ in range(5):
        at += timedelta(seconds=100)
        assert journal.mark_refused("a1", 0x87, now=at) is False
        retry = journal.next_retry_at()
        assert retry is not None
        waits.append((retry - at).total_seconds())
    assert waits == [10.0, 20.0, 40.0, 40.0, 40.0]
    [refusal] = journal.refusals()
    assert (refusal.message.id, refusal.reason_code, refusal.count) == ("a1", 0x87, 6)
    # Accepted at last: no longer refused, no longer pending.
    journal.mark_sent(["a1"])
    assert journal.refusals() == []
    assert journal.next_retry_at() is None
    assert journal.mark_refused("a1", 0x87) is False
    assert journal.mark_refused("unknown", 0x87) is False


def test_outbox_figures(journal: Journal) -> None:
    assert journal.outbox_depth() == 0
    assert journal.oldest_pending_age_s(T0) is None
    journal.enqueue([msg("e1")], now=T0)
    journal.record({"i": 1}, [msg("e2")], now=T0 + timedelta(seconds=3))
    assert journal.outbox_depth() == 2
    assert journal.oldest_pending_age_s(T0 + timedelta(seconds=10)) == pytest.approx(10.0)
    journal.mark_sent(["e1"])
    assert journal.oldest_pending_age_s(T0 + timedelta(seconds=10)) == pytest.approx(7.0)
    assert journal.oldest_pending_age_s(T0) == 0.0  # a clock behind never gives a negative age
    with pytest.raises(ValueError, match="timezone-aware"):
        journal.oldest_pending_age_s(datetime(2025, 1, 1))


def test_the_epoch_is_the_file_s_identity(tmp_path: Path) -> None:
    with Journal(tmp_path / "a.sqlite3") as a:
        epoch = a.epoch
        a.record({"i": 1}, [msg("e1")])
    with Journal(tmp_path / "a.sqlite3") as again:
        assert again.epoch == epoch
        assert list(again.inputs()) == [{"i": 1}]
        assert ids(again.pending()) == ["e1"]
    with Journal(tmp_path / "b.sqlite3") as other:
        assert other.epoch != epoch


def test_the_file_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with Journal(path):
        db = sqlite3.connect(path)
        try:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            db.close()


def test_another_process_may_read_while_the_table_writes(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with Journal(path) as writer:
        writer.record({"i": 1}, [msg("r1", "rounds")])
        writer.mark_sent(["r1"])
        with Journal(path, readonly=True) as reader:
            assert reader.epoch == writer.epoch
            writer.record({"i": 2}, [])
            assert list(reader.inputs()) == [{"i": 1}, {"i": 2}]
            assert ids(reader.sent_messages("rounds", 5)) == ["r1"]
            with pytest.raises(JournalError, match="read-only"):
                reader.enqueue([msg("x")])


def test_unusable_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="no journal there"):
        Journal(tmp_path / "missing.sqlite3", readonly=True)
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(JournalError, match=r"garbage\.sqlite3"):
        Journal(garbage)
    foreign = tmp_path / "foreign.sqlite3"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="newer version"):
        Journal(foreign)
    other = tmp_path / "other.sqlite3"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE accounts (id INTEGER)")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="another program"):
        Journal(other)


def test_bad_messages_are_refused_before_anything_is_written() -> None:
    with pytest.raises(ValueError, match="bad topic"):
        OutboxMessage(id="x", topic="a/+/b", payload=b"{}", qos=1, retain=False)
    with pytest.raises(ValueError, match="qos"):
        OutboxMessage(id="x", topic="a/b", payload=b"{}", qos=3, retain=False)
    with pytest.raises(ValueError, match="empty id"):
        OutboxMessage(id="", topic="a/b", payload=b"{}", qos=1, retain=False)


# A table process writing as fast as it can, killed without warning.
_WRITER = """
import json, sys
from table_controller.service.journal import Journal, OutboxMessage

journal = Journal(sys.argv[1])
print("epoch", journal.epoch, flush=True)
prefix = "casino/main-floor/table/war-07"
i = 0
while True:
    i += 1
    messages = [
        OutboxMessage(id=f"{i}-status", topic=f"{prefix}/status",
                      payload=json.dumps({"i": i}).encode(), qos=1, retain=True),
        OutboxMessage(id=f"{i}-a", topic=f"{prefix}/events",
                      payload=json.dumps({"i": i, "k": "a"}).encode(), qos=1, retain=False),
        OutboxMessage(id=f"{i}-b", topic=f"{prefix}/events",
                      payload=json.dumps({"i": i, "k": "b"}).encode(), qos=1, retain=False),
    ]
    n = journal.record({"i": i}, messages)
    if i % 10 == 0:
        journal.mark_sent([f"{i - 5}-a", f"{i - 5}-b"])
    print("recorded", n, flush=True)
"""


def test_a_killed_process_loses_nothing_it_was_told_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    try:
        epoch = proc.stdout.readline().split()[1]
        acknowledged = 0
        while acknowledged < 300:
            line = proc.stdout.readline()
            assert line, "the writer stopped"
            acknowledged = int(line.split()[1])
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    with Journal(path) as journal:
        assert journal.epoch == epoch
        replayed = [inp["i"] for inp in journal.inputs()]
        last = len(replayed)
        assert last >= acknowledged
        assert replayed == list(range(1, last + 1))
        # Every input's messages are there (or sent), none torn: the events not
        # marked sent, and only the latest status. The kill may have come between
        # the last input and the marking that follows it.
        sent = {i - 5 for i in range(10, last, 10)}
        maybe = {last - 5} if last % 10 == 0 else set()
        pending = ids(journal.pending(limit=10 * last))
        assert pending in (_unsent(last, sent), _unsent(last, sent | maybe))
        assert len(journal.sent_messages("events", 10 * last)) == 2 * last - (len(pending) - 1)


def _unsent(last: int, sent: set[int]) -> list[str]:
    expected: list[str] = []
    for i in range(1, last + 1):
        if i == last:
            expected.append(f"{i}-status")
        if i not in sent:
            expected += [f"{i}-a", f"{i}-b"]
    return expected
