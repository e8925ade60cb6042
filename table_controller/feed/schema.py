"""``table-controller schema --out DIR``: the interface documents, generated from the code.

Writes ``DIR/schemas/<name>-<version>.json`` (one JSON Schema per payload of
``MQTT.md``) and ``DIR/asyncapi.yaml`` (AsyncAPI 3.0: one channel per topic,
the topic prefix as a parameter, messages referencing the schemas). The
output depends only on the code, so the shipped ``docs/`` can be checked for
being current by generating again and comparing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Final

import yaml

from table_controller import __version__
from table_controller.feed.payloads import (
    CONTENT_TYPE,
    TABLE_EVENT,
    TOPIC_RULES,
    TableAlert,
    TableState,
    TableStats,
    TableStatus,
    Topic,
    WarRound,
)

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
MQTT_BINDING_VERSION: Final = "0.2.0"


def schema_file(name: str) -> str:
    """``table-status/1`` → ``table-status-1.json``."""
    return name.replace("/", "-") + ".json"


# Per topic: the payload's name, the AsyncAPI message key and what it says.
_TOPICS: Final[dict[Topic, tuple[str, str, str]]] = {
    Topic.STATUS: (
        TableStatus.SCHEMA,
        "tableStatus",
        "The table and its devices. Published on every connect, when a device's state "
        "changes and when the outbox figures change (at most once a second). The retained "
        "last will, and a clean shutdown, publish `online: false`.",
    ),
    Topic.STATE: (
        TableState.SCHEMA,
        "tableState",
        "The layout now: phase, round, hold, dealer, shoe, live wagers and cards. Burn "
        "cards as a count, never a rank (9 NYCRR §5324.22(h)(1)).",
    ),
    Topic.EVENTS: (
        "table-event/1",
        "tableEvent",
        "One message per event. `seq` rises by one per event and survives restarts; "
        "`epoch` is the journal's identity: a new journal, a new epoch.",
    ),
    Topic.ROUNDS: (
        WarRound.SCHEMA,
        "warRound",
        "The full record of one round, enough to rebuild every hand (§5324.22(i)(4)).",
    ),
    Topic.ALERTS: (
        TableAlert.SCHEMA,
        "tableAlert",
        "An alert when raised (`resolved_by: null`) and again when resolved.",
    ),
    Topic.STATS: (
        TableStats.SCHEMA,
        "tableStats",
        "Counts since the journal began; drop and win when amounts are known.",
    ),
}


def schemas() -> dict[str, dict[str, Any]]:
    """File name → JSON Schema (what the table publishes), in topic order."""
    models: dict[str, dict[str, Any]] = {
        TableStatus.SCHEMA: TableStatus.model_json_schema(mode="serialization"),
        TableState.SCHEMA: TableState.model_json_schema(mode="serialization"),
        "table-event/1": TABLE_EVENT.json_schema(mode="serialization"),
        WarRound.SCHEMA: WarRound.model_json_schema(mode="serialization"),
        TableAlert.SCHEMA: TableAlert.model_json_schema(mode="serialization"),
        TableStats.SCHEMA: TableStats.model_json_schema(mode="serialization"),
    }
    out: dict[str, dict[str, Any]] = {}
    for name, body in models.items():
        body.pop("title", None)
        out[schema_file(name)] = {
            "$schema": JSON_SCHEMA_DIALECT,
            "$id": schema_file(name),
            "title": name,
            **body,
        }
    return out


def asyncapi() -> dict[str, Any]:
    """The AsyncAPI 3.0 document of the table's MQTT interface."""
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for topic, (name, key, text) in _TOPICS.items():
        rule = TOPIC_RULES[topic]
        messages[key] = {
            "name": name,
            "title": name,
            "contentType": CONTENT_TYPE,
            "payload": {"$ref": f"schemas/{schema_file(name)}"},
            "bindings": {
                "mqtt": {
                    "payloadFormatIndicator": 1,
                    "contentType": CONTENT_TYPE,
                    "bindingVersion": MQTT_BINDING_VERSION,
                }
            },
        }
        channels[topic.value] = {
            "address": f"{{prefix}}/{topic.value}",
            "description": text,
            "parameters": {"prefix": {"$ref": "#/components/parameters/prefix"}},
            "messages": {key: {"$ref": f"#/components/messages/{key}"}},
        }
        operations[f"publish{key[0].upper()}{key[1:]}"] = {
            "action": "send",
            "channel": {"$ref": f"#/channels/{topic.value}"},
            "messages": [{"$ref": f"#/channels/{topic.value}/messages/{key}"}],
            "bindings": {
                "mqtt": {
                    "qos": rule.qos,
                    "retain": rule.retained,
                    "bindingVersion": MQTT_BINDING_VERSION,
                }
            },
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Casino War table controller",
            "version": __version__,
            "description": (
                "What one Casino War table publishes over MQTT 5 (JSON, UTF-8, "
                "`content-type: application/json`). Delivery is at least once: every "
                "message keeps its `id` when sent again, so a subscriber drops duplicates; "
                "`seq` with `epoch` on events lets it see a gap. Messages wait in the "
                "table's durable outbox while the broker is away and go out in order when "
                "it is back. Every payload carries `schema`, `id`, `table`, `site` and "
                "`ts` (RFC 3339, UTC)."
            ),
        },
        "defaultContentType": CONTENT_TYPE,
        "channels": channels,
        "operations": operations,
        "components": {
            "parameters": {
                "prefix": {
                    "description": (
                        "The table's topic prefix, `mqtt.topic_prefix` of its config: by "
                        "default `casino/{site}/table/{table}`. The table id is one whole "
                        "topic level and the MQTT username, so broker rules can confine a "
                        "table to its own topics."
                    ),
                    "examples": ["casino/main-floor/table/war-07"],
                }
            },
            "messages": messages,
        },
    }


def render() -> dict[str, str]:
    """Relative path → file text, exactly as written."""
    files = {
        f"schemas/{name}": json.dumps(body, indent=2, ensure_ascii=False) + "\n"
        for name, body in schemas().items()
    }
    files["asyncapi.yaml"] = yaml.safe_dump(
        asyncapi(), sort_keys=False, allow_unicode=True, width=100
    )
    return files


def write(out: Path) -> list[Path]:
    """Write every document under ``out``; returns the paths written."""
    written = []
    for rel, text in render().items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="folder to write schemas/*.json and asyncapi.yaml into (the project ships docs/)",
    )


def run(args: argparse.Namespace) -> int:
    for path in write(args.out):
        print(path)
    return 0
