"""PitModel fed bad input: malformed and unexpected messages are counted, never raised,
text is made safe to show, any JSON or bytes on any topic is taken or counted; and
the topic prefixes and sites it accepts, and what it imports."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from table_controller.feed.topics import DEFAULT_PREFIX
from table_controller.pit.errors import PitConfigError
from table_controller.pit.model import PitModel
from table_controller.pit.render import render
from table_controller.pit.topics import subscription_filter
from table_controller.pit.views import TableKey
from tests.pit_rig import _consistent, _model, _view
from tests.test_pit_payloads import (
    SITE,
    TABLE,
    alert,
    card_event,
    enc,
    event,
    round_record,
    state,
    stats,
    status,
    topic,
)

# ---------------------------------------------------------------- malformed and unexpected


def _with(payload: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``payload`` with the field at a dotted ``path`` set to ``value``."""
    out: dict[str, Any] = json.loads(json.dumps(payload))
    node: Any = out
    *parents, leaf = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    return out


MALFORMED: list[tuple[str, str, bytes]] = [
    ("status", "truncated JSON", b'{"schema": "table-status/1", "online": tr'),
    ("status", "not an object", b"[1, 2, 3]"),
    ("status", "null", b"null"),
    ("status", "not UTF-8", b'{"schema": "table-status/1", "x": "\xff\xfe"}'),
    ("status", "NaN", b'{"schema": "table-status/1", "outbox": {"depth": NaN}}'),
    ("status", "deep nesting", b"[" * 100_000 + b"]" * 100_000),
    ("status", "no schema", enc({k: v for k, v in status().items() if k != "schema"})),
    ("status", "schema of another topic", enc(_with(status(), "schema", "war-round/1"))),
    ("status", "online as a word", enc(_with(status(), "online", "yes"))),
    ("status", "devices as a list", enc(_with(status(), "devices", ["shoe"]))),
    ("status", "device as a word", enc(_with(status(), "devices.shoe", "ok"))),
    ("status", "depth as text", enc(_with(status(), "outbox.depth", "3"))),
    ("status", "depth true", enc(_with(status(), "outbox.depth", True))),
    ("status", "table of another topic", enc(_with(status(), "table", "war-99"))),
    ("status", "site of another topic", enc(_with(status(), "site", "elsewhere"))),
    ("state", "round id a float", enc(_with(state(), "round_id", 12.5))),
    ("state", "held as 1", enc(_with(state(), "held", 1))),
    ("state", "positions a number", enc(_with(state(), "positions", 3))),
    ("rounds", "positions an object", enc(_with(round_record(), "positions", {"1": {}}))),
    ("rounds", "position a string", enc(_with(round_record(), "positions.0", "P1"))),
    ("rounds", "net a float", enc(_with(round_record(), "net", 37.5))),
    ("rounds", "void a string", enc(_with(round_record(), "void", "no"))),
    ("rounds", "empty", b""),
    ("alerts", "resolved_by a number", enc(_with(alert("a"), "resolved_by", 1))),
    ("alerts", "alert id a list", enc(_with(alert("a"), "alert", ["a"]))),
    ("events", "no seq", enc({k: v for k, v in event(1).items() if k != "seq"})),
    ("events", "seq as text", enc(_with(event(1), "seq", "1"))),
    ("events", "no epoch", enc({k: v for k, v in event(1).items() if k != "epoch"})),
    ("stats", "a count as an object in a group", enc(_with(stats(), "alerts_by_code.X", {}))),
    ("status", "too big", b'{"schema": "table-status/1", "x": "' + b"a" * (1 << 20) + b'"}'),
]


@pytest.mark.parametrize(("kind", "payload"), [(k, p) for k, _, p in MALFORMED],
                         ids=[f"{k}-{why}" for k, why, _ in MALFORMED])  # fmt: skip
def test_malformed_messages_are_counted_not_raised(kind: str, payload: bytes) -> None:
    model = _model()
    model.feed(topic("status"), enc(status()))
    model.feed(topic("rounds"), enc(round_record(1)))
    model.feed(topic("alerts"), enc(alert("keep")))
    before = _view(model)
    assert not model.feed(topic(kind), payload)
    after = _view(model)
    assert model.malformed == after.malformed == 1
    assert (after.status, after.state, after.rounds, after.open_alerts, after.events) == (
        before.status, before.state, before.rounds, before.open_alerts, before.events,
    )  # fmt: skip
    _consistent(model)


UNEXPECTED: list[tuple[str, bytes]] = [
    (topic("weather"), enc(status())),
    (topic("status") + "/extra", enc(status())),
    (f"casino/{SITE}/table/{TABLE}", enc(status())),
    (f"casino/elsewhere/table/{TABLE}/status", enc(status(site="elsewhere"))),
    ("somewhere/else", b"{}"),
    (topic("status"), enc(_with(status(), "schema", "table-status/2"))),
]


@pytest.mark.parametrize(
    ("where", "payload"),
    UNEXPECTED,
    ids=["kind", "deeper", "prefix-only", "other-site", "outside", "v2"],
)
def test_unexpected_messages_are_counted_not_raised(where: str, payload: bytes) -> None:
    model = _model()
    assert not model.feed(where, payload)
    assert model.unexpected == 1
    assert model.malformed == 0
    _consistent(model)


def test_text_is_made_safe_to_show() -> None:
    model = _model()
    payload = alert("a-1", message="chips \x1b[2J\x07 moved \u202eevil\ud800 [bold]x[/]")
    model.feed(topic("alerts"), json.dumps(payload).encode())  # \ud800 stays an escape
    (shown,) = _view(model).open_alerts
    assert shown.message is not None
    assert not any(c in shown.message for c in "\x1b\x07\u202e\ud800")
    assert "[bold]x[/]" in shown.message
    shown.message.encode("utf-8")  # a lone surrogate would fail here
    long = alert("a-2", message="x" * 10_000)
    model.feed(topic("alerts"), enc(long))
    assert len(_view(model).open_alerts[1].message or "") <= 200


# ---------------------------------------------------------------- any input at all

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_KINDS = ("status", "state", "events", "rounds", "alerts", "stats")
_SCHEMAS = {
    "status": "table-status/1", "state": "table-state/1", "events": "table-event/1",
    "rounds": "war-round/1", "alerts": "table-alert/1", "stats": "table-stats/1",
}  # fmt: skip
_FIELDS = (
    "online", "devices", "outbox", "phase", "round_id", "held", "dealer", "shoe",
    "positions", "seq", "epoch", "type", "card", "role", "position", "dealer_card",
    "dealer_war_card", "void", "void_reason", "net", "alert", "code", "severity",
    "message", "spot", "resolved_by", "rounds", "alerts_by_code", "id", "table", "site",
)  # fmt: skip


_VALID: dict[str, Any] = {
    "status": status(sensors="fault", detail="door"),
    "state": state(),
    "events": card_event(1, n=1, card="7H", role="position", position=1),
    "rounds": round_record(),
    "alerts": alert("a-1"),
    "stats": stats(),
}


@st.composite
def _payloads(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid spec payload with some fields replaced by any JSON, or removed."""
    kind = draw(st.sampled_from(_KINDS))
    payload = json.loads(json.dumps(_VALID[kind]))
    for name in draw(st.lists(st.sampled_from(_FIELDS), max_size=4, unique=True)):
        if draw(st.booleans()):
            payload.pop(name, None)
        else:
            payload[name] = draw(_json)
    if draw(st.booleans()):
        payload["id"] = draw(st.sampled_from(["m-1", "m-2", "m-3"]))
    return kind, json.dumps(payload).encode()


@settings(max_examples=100)
@given(st.lists(_payloads(), min_size=1, max_size=12))
def test_any_json_payload_is_taken_or_counted(messages: list[tuple[str, bytes]]) -> None:
    model = _model()
    for kind, payload in messages:
        model.feed(topic(kind), payload)
    _consistent(model)
    Console(file=_Sink(), width=100).print(render(model))


@settings(max_examples=100)
@given(st.sampled_from(_KINDS), st.binary(max_size=200), st.text(max_size=30))
def test_any_bytes_on_any_topic_are_taken_or_counted(kind: str, payload: bytes, level: str) -> None:
    model = _model()
    model.feed(topic(kind), payload)
    model.feed(f"casino/{SITE}/table/{level}/{kind}", payload)
    _consistent(model)
    Console(file=_Sink(), width=100).print(render(model))


class _Sink(io.StringIO):
    """A console file that keeps nothing but checks what a UTF-8 terminal would need."""

    def write(self, text: str) -> int:
        text.encode("utf-8")
        return len(text)


# ---------------------------------------------------------------- prefixes


@pytest.mark.parametrize(
    ("prefix", "site", "expected"),
    [
        (DEFAULT_PREFIX, SITE, f"casino/{SITE}/table/+/#"),
        (DEFAULT_PREFIX, None, "casino/+/table/+/#"),
        ("pits/{table}", None, "pits/+/#"),
        ("floor-{site}/+/t-{table}", "x", "floor-x/+/+/#"),
        ("floor-{site}/+/t-{table}", None, "+/+/+/#"),
    ],
)
def test_subscription_filter(prefix: str, site: str | None, expected: str) -> None:
    assert subscription_filter(prefix, site) == expected


def test_a_custom_prefix_is_matched_whole_level_by_level() -> None:
    model = PitModel("floor-{site}/+/t-{table}")
    assert model.feed("floor-east/any/t-war-3/status", enc(status(table="war-3", site="east")))
    assert [v.key for v in model.tables] == [TableKey("east", "war-3")]
    assert not model.feed("floor-east/any/war-3/status", enc(status(table="war-3")))
    assert model.unexpected == 1


def test_a_prefix_without_site_takes_the_pit_site() -> None:
    model = PitModel("pits/{table}", site="north")
    model.feed("pits/war-1/status", enc(status(table="war-1", site="north")))
    assert [v.key for v in model.tables] == [TableKey("north", "war-1")]


@pytest.mark.parametrize(
    "prefix",
    ["casino/{site}/table", "casino/{table}/{table}", "casino/#/{table}", "/casino/{table}",
     "casino/{table}/", "casino/{other}/{table}", "casino/x+y/{table}", "casino/{table"],
)  # fmt: skip
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(PitConfigError, match="--prefix"):
        PitModel(prefix)


@pytest.mark.parametrize("site", ["a/b", "+", "#", ""])
def test_bad_sites_are_refused(site: str) -> None:
    with pytest.raises(PitConfigError, match="--site"):
        PitModel(site=site)


def test_the_model_and_the_view_load_nothing_of_the_table_service() -> None:
    """A pit machine runs no table: its model, parsing and rendering, and the feed's
    payload models, import nothing of ``table_controller.service`` (checked in a fresh
    interpreter, so that what other tests imported does not hide an import)."""
    code = (
        "import sys\n"
        "import table_controller.feed.payloads, table_controller.pit.model\n"
        "import table_controller.pit.render, table_controller.pit.views\n"
        "print(sorted(m for m in sys.modules if m.startswith('table_controller.service')"
        " or m in ('sqlite3', 'aiomqtt', 'paho')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"
