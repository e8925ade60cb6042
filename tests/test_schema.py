"""The shipped JSON Schemas and AsyncAPI document: current, complete and consistent."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from table_controller.cli import main
from table_controller.feed.envelope import Envelope
from table_controller.feed.examples import EXAMPLES
from table_controller.feed.payloads import (
    RFC3339_PATTERN,
    SCHEMA_NAMES,
    TOPIC_RULES,
    AlertCode,
    ResolvedBy,
    Topic,
    TopicRule,
    parse_payload,
)
from table_controller.feed.schema import render, schema_file, write

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_shipped_documents_are_current(tmp_path: Path) -> None:
    write(tmp_path)
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    shipped = sorted(
        p.relative_to(DOCS)
        for p in [*DOCS.glob("schemas/*"), DOCS / "asyncapi.yaml"]
        if p.is_file()
    )
    assert shipped == generated, "run `table-controller schema --out docs` and commit docs/"
    for rel in generated:
        assert (DOCS / rel).read_bytes() == (tmp_path / rel).read_bytes(), (
            f"docs/{rel} is stale: run `table-controller schema --out docs`"
        )


def test_generation_is_deterministic() -> None:
    assert render() == render()


def test_the_command_writes_the_documents(tmp_path: Path, capsys: Any) -> None:
    assert main(["schema", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out.split()
    assert sorted(printed) == sorted(str(tmp_path / "out" / rel) for rel in render())


def _schemas() -> dict[str, dict[str, Any]]:
    return {rel: json.loads(text) for rel, text in render().items() if rel.endswith(".json")}


def test_one_schema_per_payload_requiring_the_envelope() -> None:
    schemas = _schemas()
    assert sorted(schemas) == sorted(f"schemas/{schema_file(n)}" for n in SCHEMA_NAMES)
    for rel, schema in schemas.items():
        name = schema["title"]
        assert rel == f"schemas/{schema_file(name)}"
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        # The event schema is one object per event type.
        objects = (
            [schema["$defs"][ref["$ref"].rsplit("/", 1)[1]] for ref in schema["oneOf"]]
            if "oneOf" in schema
            else [schema]
        )
        for obj in objects:
            assert obj["additionalProperties"] is False
            assert {"schema", "id", "table", "site", "ts"} <= set(obj["required"])
            assert obj["properties"]["schema"]["const"] == name
            assert obj["properties"]["ts"]["pattern"] == RFC3339_PATTERN


def test_event_types_are_told_apart_by_type() -> None:
    schema = _schemas()["schemas/table-event-1.json"]
    mapping = schema["discriminator"]["mapping"]
    assert set(mapping) == {
        "shoe_started",
        "dealer_changed",
        "bets_closed",
        "card",
        "decision",
        "round_settled",
        "round_voided",
        "reshuffle_due",
        "settings_changed",
        "alert",
    }


def test_timestamps_and_numbers_as_published_fit_the_schemas() -> None:
    env = Envelope(table="war-07", site="main-floor", prefix="casino/main-floor/table/war-07")
    ts = datetime(2025, 3, 1, 20, 15, 1, 999999, tzinfo=UTC)
    out = json.loads(
        env.event({"seq": 1, "epoch": "e", "round_id": 1, "type": "reshuffle_due"}, ts=ts).payload
    )
    assert re.fullmatch(RFC3339_PATTERN, out["ts"])
    schema = _schemas()["schemas/war-round-1.json"]
    npu = schema["$defs"]["WagerRecord"]["properties"]["net_per_unit"]
    assert npu["type"] == "number"


def test_the_asyncapi_document_describes_every_topic() -> None:
    doc = yaml.safe_load(render()["asyncapi.yaml"])
    assert doc["asyncapi"] == "3.0.0"
    assert doc["defaultContentType"] == "application/json"
    assert "prefix" in doc["components"]["parameters"]
    channels = doc["channels"]
    assert set(channels) == {t.value for t in Topic}
    files = set(render())
    for topic in Topic:
        channel = channels[topic.value]
        assert channel["address"] == f"{{prefix}}/{topic.value}"
        assert channel["parameters"]["prefix"] == {"$ref": "#/components/parameters/prefix"}
        [ref] = channel["messages"].values()
        message = _resolve(doc, ref["$ref"])
        assert message["contentType"] == "application/json"
        assert message["payload"]["$ref"] in files
        [operation] = [
            op
            for op in doc["operations"].values()
            if op["channel"]["$ref"] == f"#/channels/{topic.value}"
        ]
        assert operation["action"] == ("send" if rule_of(topic).by_table else "receive")
        assert _resolve(doc, operation["messages"][0]["$ref"]) == ref
        rule = TOPIC_RULES[topic]
        assert operation["bindings"]["mqtt"]["qos"] == rule.qos
        assert operation["bindings"]["mqtt"]["retain"] is rule.retained


def rule_of(topic: Topic) -> TopicRule:
    return TOPIC_RULES[topic]


def test_the_asyncapi_document_names_servers_security_and_roles() -> None:
    doc = yaml.safe_load(render()["asyncapi.yaml"])
    servers = doc["servers"]
    assert {s["protocol"] for s in servers.values()} == {"mqtt", "secure-mqtt"}
    assert {s["host"].rsplit(":", 1)[1] for s in servers.values()} == {"1883", "8883"}
    schemes = doc["components"]["securitySchemes"]
    assert set(schemes) == {"table", "pit", "recorder"}
    for server in servers.values():
        assert server["protocolVersion"] == "5"
        refs = {_resolve(doc, ref["$ref"])["type"] for ref in server["security"]}
        assert refs == {"userPassword"}
        assert len(server["security"]) == len(schemes)


def _objects(node: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema with properties under ``node`` (the $defs included)."""
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            yield node.get("title", "?"), node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


def test_every_field_of_every_schema_has_a_description() -> None:
    missing = []
    for rel, schema in _schemas().items():
        body = {k: v for k, v in schema.items() if k != "examples"}
        for title, obj in _objects(body):
            missing += [
                f"{rel} {title}.{name}"
                for name, prop in obj["properties"].items()
                if not prop.get("description")
            ]
    assert missing == []


def test_the_signs_of_net_and_win_and_the_currency_are_stated_at_the_fields() -> None:
    schemas = _schemas()
    record = schemas["schemas/war-round-1.json"]
    assert "PLAYERS'" in record["properties"]["net"]["description"]
    assert "HOUSE's" in schemas["schemas/table-stats-1.json"]["properties"]["win"]["description"]
    currency = schemas["schemas/table-status-1.json"]["properties"]["currency"]
    assert "ISO 4217" in currency["description"]
    assert "currency" in record["$defs"]["WagerRecord"]["properties"]["amount"]["description"]


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_each_schema_has_one_example_valid_for_the_model_and_the_shipped_schema(
    name: str,
) -> None:
    shipped = json.loads((DOCS / "schemas" / schema_file(name)).read_text(encoding="utf-8"))
    [example] = shipped["examples"]
    assert example == EXAMPLES[name]
    Draft202012Validator.check_schema(shipped)
    errors = [e.message for e in Draft202012Validator(shipped).iter_errors(example)]
    assert errors == []
    model = parse_payload(example)
    assert json.loads(model.to_json()) == example  # nothing defaulted, nothing dropped


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_a_broken_example_fails_the_shipped_schema(name: str) -> None:
    shipped = json.loads((DOCS / "schemas" / schema_file(name)).read_text(encoding="utf-8"))
    broken = {**EXAMPLES[name], "surprise": 1}
    assert not Draft202012Validator(shipped).is_valid(broken)
    with pytest.raises(ValueError):  # noqa: PT011
        parse_payload(broken)


def _resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/")
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node[part]
    return node


FEED_MD = DOCS / "feed.md"


def _field_names(node: Any) -> set[str]:
    return {name for _, obj in _objects(node) for name in obj["properties"]}


def test_feed_md_explains_every_field_alert_code_and_resolution() -> None:
    text = FEED_MD.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    spans = re.findall(r"`([^`]+)`", prose)
    named = set(spans) | {word for span in spans for word in re.findall(r"\w+", span)}
    fields = set().union(
        *(
            _field_names({k: v for k, v in s.items() if k != "examples"})
            for s in _schemas().values()
        )
    )
    assert sorted(fields - named) == []
    assert sorted({c.value for c in AlertCode} - named) == []
    assert sorted({r.value for r in ResolvedBy} - named) == []
    assert sorted(set(SCHEMA_NAMES) - named) == []
    # Every code has its own row in the table of alert codes.
    rows = set(re.findall(r"^\| `([A-Z_]+)` \| (?:critical|warning|info)", text, re.MULTILINE))
    assert rows == {c.value for c in AlertCode}


@pytest.mark.parametrize("page", ["feed.md", "rules.md", "odds.md"])
def test_the_feed_and_rules_pages_link_only_inside_the_repository(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    assert "shared/" not in text
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert not target.startswith(("http:", "https:")), target
        assert (DOCS / target).exists(), f"docs/{page} links to {target}, which is not there"
