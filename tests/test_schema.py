"""The shipped JSON Schemas and AsyncAPI document: current, complete and consistent."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from table_controller.cli import main
from table_controller.feed.payloads import (
    RFC3339_PATTERN,
    SCHEMA_NAMES,
    TOPIC_RULES,
    Envelope,
    Topic,
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
    assert shipped == generated, "run `make schema` and commit docs/"
    for rel in generated:
        assert (DOCS / rel).read_bytes() == (tmp_path / rel).read_bytes(), (
            f"docs/{rel} is stale: run `make schema`"
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
        "alert",
        "settings_changed",
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
        assert operation["action"] == "send"
        assert _resolve(doc, operation["messages"][0]["$ref"]) == ref
        rule = TOPIC_RULES[topic]
        assert operation["bindings"]["mqtt"]["qos"] == rule.qos
        assert operation["bindings"]["mqtt"]["retain"] is rule.retained


def _resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/")
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node[part]
    return node
