"""The recorder's pure parts: config, intake, the feed's contiguity and gaps."""

from __future__ import annotations

import contextlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from table_controller.engine.rules import NY
from table_controller.feed.payloads import rfc3339
from table_controller.recorder.config import load_config, parse_config
from table_controller.recorder.errors import RecorderConfigError
from table_controller.recorder.intake import IntakeError, Leaf, parse_message, parse_runs
from table_controller.recorder.sequence import GAP_WAIT_S, REPLAY_MAX_SPAN, SeqTrack, split_range
from table_controller.recorder.store.writer import RoundFigures, round_figures
from table_controller.recorder.times import bound_text, parse_time
from tests.engine.helpers import Table, foreign_card_in_the_war

GOOD = {"mqtt": {"sites": ["main-floor"], "client_id": "rec-1"}}


def test_config_defaults_and_toml(tmp_path: Path) -> None:
    path = tmp_path / "recorder.toml"
    path.write_text(
        '[mqtt]\nurl = "mqtts://broker:8883"\nusername = "rec-1"\nsites = ["a", "b"]\n'
        '[database]\nurl = "postgresql://rec@db/casino"\n[http]\nlisten = "[::1]:8080"\n'
        'users_file = "/var/lib/casino-recorder/pit-users"\n'
    )
    cfg = load_config(path)
    assert cfg.http.users_file == Path("/var/lib/casino-recorder/pit-users")
    assert cfg.mqtt.name == "rec-1"
    assert cfg.mqtt.group == "recorders"
    assert cfg.database.url.startswith("postgresql://")


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"mqtt": {"sites": ["a"], "colour": "red"}}, "mqtt.colour"),
        ({"mqtt": {"sites": []}}, "mqtt.sites"),
        ({"mqtt": {"sites": ["a/b"]}}, "mqtt.sites.0"),
        ({"mqtt": {"sites": ["a"], "url": "http://x"}}, "mqtt.url"),
        ({"mqtt": {"sites": ["a"], "group": "a+b"}}, "mqtt.group"),
        ({"database": {"url": "mysql://x"}}, "database.url"),
        ({"database": {"url": "sqlite:///"}}, "database.url"),
        ({"http": {"listen": "8080"}}, "http.listen"),
        ({"recorder": {}}, "recorder"),
    ],
)
def test_config_errors_name_the_key(change: dict[str, object], key: str) -> None:
    with pytest.raises(RecorderConfigError, match=rf"(^|; ){key}: "):
        parse_config(GOOD | change)


def test_config_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[mqtt\n")
    with pytest.raises(RecorderConfigError, match=r"bad\.toml: not valid TOML"):
        load_config(path)


def _message(**fields: object) -> bytes:
    body = {
        "schema": "table-event/1",
        "id": "e-1",
        "table": "t1",
        "site": "s1",
        "ts": "2026-01-01T00:00:00.000Z",
        "seq": 1,
        "epoch": "ep",
        "round_id": 1,
        "type": "reshuffle_due",
        "feed_seq": 5,
    }
    return json.dumps(body | fields).encode()


def test_intake_takes_the_envelope_and_checks_the_body() -> None:
    msg = parse_message("casino/s1/table/t1/events", _message())
    assert (msg.leaf, msg.key, msg.feed_seq, msg.problem) == (
        Leaf.EVENTS,
        ("s1", "t1", "ep"),
        5,
        None,
    )
    odd = parse_message("casino/s1/table/t1/events", _message(type="no_such_event"))
    assert odd.problem is not None  # stored all the same, with the reason
    foreign = parse_message("casino/s1/table/t2/events", _message())
    assert foreign.problem is not None


@pytest.mark.parametrize(
    "payload",
    [b"\xff", b"[]", b"{}", _message(id=""), _message(ts="yesterday"), _message(feed_seq=0)],
)
def test_intake_refuses_what_cannot_be_stored_by_id(payload: bytes) -> None:
    with pytest.raises(IntakeError):
        parse_message("casino/s1/table/t1/events", payload)


@given(st.binary(max_size=200))
def test_intake_garbage_only_raises_intake_error(payload: bytes) -> None:
    with contextlib.suppress(IntakeError):
        parse_message("casino/s1/table/t1/rounds", payload)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [*value, *(x for v in value.values() for x in _leaves(v))]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


@given(st.dictionaries(st.text(), _VALUES, max_size=4), st.sampled_from(sorted(Leaf)))
def test_what_intake_hands_on_every_database_can_store(extra: dict, leaf: Leaf) -> None:  # type: ignore[type-arg]
    """Any text, any number, in any field: no NUL or lone surrogate reaches a column, and a
    body with a number beyond 64 bits never counts as a round or alert (whose rows hold it)."""
    payload = json.loads(_message()) | extra
    try:
        msg = parse_message(f"casino/s1/table/t1/{leaf}", json.dumps(payload).encode())
    except IntakeError:
        return
    for value in [msg.id, msg.site, msg.table, msg.schema, msg.epoch, *_leaves(msg.body)]:
        if isinstance(value, str):
            assert "\x00" not in value
            value.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(value, int) and abs(value) >= 2**63:
            assert not msg.usable


def test_replay_unavailable_runs_as_the_table_writes_them() -> None:
    assert parse_runs("rec-1 asked for feed_seq 3..5, 8: no longer held") == [(3, 5), (8, 8)]
    assert parse_runs("nothing here") == []


@given(st.lists(st.integers(1, 60), unique=True), st.integers(0, 60))
def test_contiguous_is_the_longest_stored_prefix(seqs: list[int], announced: int) -> None:
    track = SeqTrack()
    for seq in seqs:
        track.add([seq])
        track.settle()
    stored = set(seqs)
    prefix = 0
    while prefix + 1 in stored:
        prefix += 1
    assert track.contiguous == prefix
    track.announce(announced)
    missing = {s for a, b in track.holes() for s in range(a, b + 1)}
    assert missing == set(range(1, max([announced, *seqs, 0]) + 1)) - stored


@given(st.lists(st.integers(1, 40), unique=True), st.integers(1, 40), st.integers(0, 10))
def test_permanent_gaps_are_settled_and_never_asked_for(
    seqs: list[int], first: int, span: int
) -> None:
    track = SeqTrack()
    track.add(seqs)
    track.announce(50)
    track.mark_permanent(first, first + span)
    track.settle()
    asked = {s for a, b in track.holes() for s in range(a, b + 1)}
    assert not asked & (set(range(first, first + span + 1)) - set(seqs))
    assert track.contiguous >= 0


class _Fixed(random.Random):
    """Randomness pinned to one value, for the shortest or the longest jitter."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


SHORTEST, LONGEST = _Fixed(0.0), _Fixed(0.999_999)


def test_a_gap_is_asked_for_after_the_wait_then_with_capped_backoff() -> None:
    track = SeqTrack()
    track.add([1, 2, 5])
    track.settle()
    assert track.due(100.0, SHORTEST) == []
    assert track.due(100.0 + GAP_WAIT_S, SHORTEST) == [(3, 4)]
    assert track.due(100.0 + GAP_WAIT_S + 0.1, SHORTEST) == []  # backing off
    waits = []
    now = 100.0 + GAP_WAIT_S
    for _ in range(12):
        nxt = track.next_request
        waits.append(nxt - now)
        now = nxt
        assert track.due(now, LONGEST) == [(3, 4)]
    assert max(waits) <= 10.0
    track.add([3, 4])
    assert track.settle()
    assert track.due(now + 100, SHORTEST) == []


def test_a_new_gap_waits_its_own_two_seconds_beside_an_older_one() -> None:
    track = SeqTrack()
    track.add([2])
    track.settle()
    assert track.due(0.0, SHORTEST) == []  # 1 is missing from now
    track.add([10])  # 5..9 (and 3, 4) missing only from now on
    assert track.due(GAP_WAIT_S - 0.1, SHORTEST) == []
    assert track.due(GAP_WAIT_S, SHORTEST) == [(1, 1)]
    later = track.next_request
    assert later < 2 * GAP_WAIT_S - 0.1  # the shortest back-off comes before 3..9 are due
    assert track.due(later, SHORTEST) == [(1, 1)]
    assert track.due(max(track.next_request, 2 * GAP_WAIT_S), SHORTEST) == [(1, 1), (3, 9)]


def test_replays_are_split_at_the_limit() -> None:
    parts = split_range(1, 2 * REPLAY_MAX_SPAN + 1)
    assert parts == [(1, 10_000), (10_001, 20_000), (20_001, 20_001)]


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), timezones=st.just(UTC)),
    st.integers(min_value=-2_000, max_value=2_000),
)
def test_a_bound_compares_with_stored_times_as_the_time_itself(bound: datetime, us: int) -> None:
    """Stored times have milliseconds and compare as text: against the bound's text, a
    stored time is at or after it exactly when it is at or after the bound itself."""
    stored = rfc3339(bound + timedelta(microseconds=us))
    assert (stored >= bound_text(bound)) == (parse_time(stored) >= bound)


def test_the_last_bound_there_is_still_has_a_text() -> None:
    assert bound_text(datetime.max.replace(tzinfo=UTC)) == "9999-12-31T23:59:59.999Z"


def test_a_round_voided_in_its_war_deal_adds_up_as_the_table_counts_it() -> None:
    """The report's figures of a round voided once its original deal was settled are what
    that deal settled, as the table's own stats count them (docs/rules.md VOID_ROUND); a
    round voided before it settles nothing."""
    t = foreign_card_in_the_war(NY)
    before = t.state.stats
    t.ok("VOID_ROUND")
    after = t.state.stats
    assert before.drop is not None
    assert after.drop is not None
    got = round_figures(t.record())
    assert (got.void, got.net, got.handle) == (True, t.record()["net"], after.drop - before.drop)
    assert (got.ties, got.wars, got.surrenders) == (2, 1, 1)
    assert (after.ties, after.wars, after.surrenders) == (2, 1, 1)
    early = Table.of(NY)
    early.open_shoe()
    early.bets({1: (500, 100, None)})
    early.card("KH")
    early.ok("VOID_ROUND")
    assert round_figures(early.record()) == RoundFigures(True, 0, None, 0, 0, 0)
