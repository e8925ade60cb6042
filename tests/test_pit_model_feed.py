"""PitModel fed the same message twice, and events with gaps: a resend is dropped by its
id, and the event seqs that never arrived are counted per table and per epoch."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.pit.model import PitModel
from table_controller.pit.views import Link
from tests.pit_rig import _consistent, _model, _view
from tests.test_pit_payloads import (
    alert,
    card_event,
    enc,
    event,
    last_will,
    round_record,
    stats,
    status,
    topic,
)

# ---------------------------------------------------------------- duplicates


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("rounds", round_record(1207)),
        ("alerts", alert("a-1")),
        ("events", event(1)),
        ("status", status(msg_id="status-1")),
    ],
    ids=["rounds", "alerts", "events", "status"],
)
def test_a_message_sent_again_is_dropped(kind: str, payload: dict[str, Any]) -> None:
    model = _model()
    assert model.feed(topic(kind), enc(payload))
    before = _view(model)
    assert not model.feed(topic(kind), enc(payload))
    after = _view(model)
    assert model.duplicates == after.duplicates == 1
    assert (after.rounds, after.open_alerts, after.events) == (
        before.rounds, before.open_alerts, before.events,
    )  # fmt: skip
    _consistent(model)


def test_a_retained_value_sent_again_after_another_is_shown_again() -> None:
    """The broker keeps the last retained message: an older status resent after the
    last will is what it holds again, from a table that is connected again."""
    model = _model()
    online = status(msg_id="status-1")
    will = {**last_will(), "id": "will-1"}
    for payload in (online, will, online):
        assert model.feed(topic("status"), enc(payload))
    assert _view(model).link is Link.ONLINE
    assert model.duplicates == 0
    assert not model.feed(topic("status"), enc(online))
    assert model.duplicates == 1


def test_a_cleared_retained_value_can_come_back_with_its_id() -> None:
    model = _model()
    model.feed(topic("stats"), enc({**stats(), "id": "stats-1"}))
    model.feed(topic("stats"), b"")
    assert model.feed(topic("stats"), enc({**stats(), "id": "stats-1"}))
    assert _view(model).stats is not None


def test_a_resent_resolution_does_not_reopen_or_double_count() -> None:
    model = _model()
    raised, resolved = alert("a-1"), alert("a-1", resolved_by="CONFIRM")
    for payload in (raised, resolved, raised, resolved):
        model.feed(topic("alerts"), enc(payload))
    assert _view(model).open_alerts == ()
    assert model.duplicates == 2


def test_different_ids_are_different_messages() -> None:
    model = _model()
    model.feed(topic("rounds"), enc(round_record(5, msg_id="r-a")))
    model.feed(topic("rounds"), enc(round_record(5, msg_id="r-b")))
    assert len(_view(model).rounds) == 2
    assert model.duplicates == 0


def test_a_bad_message_does_not_make_its_good_resend_a_duplicate() -> None:
    model = _model()
    bad = round_record(3)
    bad["net"] = "lots"
    assert not model.feed(topic("rounds"), enc(bad))
    assert model.feed(topic("rounds"), enc(round_record(3)))
    assert model.malformed == 1
    assert model.duplicates == 0


# ---------------------------------------------------------------- gaps in events


def _events(model: PitModel, seqs: list[int], epoch: str = "journal-a") -> None:
    for seq in seqs:
        model.feed(topic("events"), enc(event(seq, epoch=epoch)))


def test_gaps_in_seq_are_counted() -> None:
    model = _model()
    _events(model, [1, 2, 5, 6, 9])
    events = _view(model).events
    assert (events.missing, events.last_seq, events.received) == (4, 9, 5)


def test_a_late_event_fills_its_gap() -> None:
    model = _model()
    _events(model, [1, 2, 5])
    _events(model, [3])
    events = _view(model).events
    assert (events.missing, events.out_of_order, events.last_seq) == (1, 0, 5)


def test_an_event_below_the_last_that_fills_no_gap_is_out_of_order() -> None:
    model = _model()
    _events(model, [10, 11])
    model.feed(topic("events"), enc(event(11, msg_id="another-id")))
    _events(model, [4])  # before the first this pit saw: not a gap it counted
    events = _view(model).events
    assert (events.missing, events.out_of_order) == (0, 2)


def test_a_pit_started_late_counts_no_gap_before_the_first_event() -> None:
    model = _model()
    _events(model, [5000, 5001])
    assert _view(model).events.missing == 0


def test_a_new_epoch_starts_its_own_count() -> None:
    # docs/feed.md: seq is per table, and epoch is the journal's identity.
    model = _model()
    _events(model, [1, 2, 3], epoch="journal-a")
    _events(model, [1], epoch="journal-b")
    _events(model, [3], epoch="journal-b")
    events = _view(model).events
    assert (events.missing, events.epoch, events.last_seq) == (1, "journal-b", 3)


def test_gaps_are_per_table() -> None:
    model = _model()
    for table, seqs in (("war-01", [1, 3]), ("war-02", [7, 8])):
        for seq in seqs:
            model.feed(topic("events", table=table), enc(event(seq, table=table)))
    assert _view(model, "war-01").events.missing == 1
    assert _view(model, "war-02").events.missing == 0


def test_a_burn_card_event_shows_no_rank() -> None:
    model = _model()
    model.feed(topic("events"), enc(card_event(1, n=1, card=None, role="burn", position=None)))
    events = _view(model).events
    assert (events.last_type, events.last_detail) == ("card", "burn")
    model.feed(topic("events"), enc(card_event(2, n=2, card="7H", role="position", position=1)))
    assert _view(model).events.last_detail == "7H position P1"


@settings(max_examples=150)
@given(
    st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=80),
    st.randoms(use_true_random=False),
)
def test_missing_is_what_never_arrived_after_the_first(seqs: list[int], rnd: random.Random) -> None:
    """Whatever the order and repetition, the gap count is the seqs between the first seen
    and the highest seen that never arrived."""
    model = _model()
    for seq in seqs:
        # Half the repeats are resends (same id), half new messages with a reused seq.
        msg_id = f"ev-{seq}" if rnd.random() < 0.5 else f"ev-{seq}-{rnd.random()}"
        model.feed(topic("events"), enc(event(seq, msg_id=msg_id)))
    first, highest = seqs[0], max(seqs)
    expected = set(range(first, highest + 1)) - set(seqs)
    assert _view(model).events.missing == len(expected)
    _consistent(model)
