"""The interface documents, generated from the code: JSON Schemas and the AsyncAPI document.

:func:`write` puts ``DIR/schemas/<name>-<version>.json`` (one JSON Schema per
payload of docs/feed.md, each with its example) and ``DIR/asyncapi.yaml`` (see
:mod:`table_controller.feed.asyncapi`). The output depends only on the code, so
the shipped ``docs/`` can be checked for being current by generating again and
comparing (``table-controller schema --out docs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import yaml

from table_controller.feed.asyncapi import asyncapi
from table_controller.feed.examples import EXAMPLES
from table_controller.feed.payloads import PAYLOAD_MODELS, TABLE_EVENT, TABLE_EVENT_SCHEMA
from table_controller.feed.topics import TOPIC_RULES, schema_file

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

__all__ = ["JSON_SCHEMA_DIALECT", "render", "schema_file", "schemas", "write"]


def _model_schemas() -> dict[str, dict[str, Any]]:
    out = {m.SCHEMA: m.model_json_schema(mode="serialization") for m in PAYLOAD_MODELS}
    out[TABLE_EVENT_SCHEMA] = TABLE_EVENT.json_schema(mode="serialization")
    return out


def schemas() -> dict[str, dict[str, Any]]:
    """File name → JSON Schema of every payload, in topic order."""
    models = _model_schemas()
    out: dict[str, dict[str, Any]] = {}
    for rule in TOPIC_RULES.values():
        body = models[rule.schema]
        body.pop("title", None)
        out[schema_file(rule.schema)] = {
            "$schema": JSON_SCHEMA_DIALECT,
            "$id": schema_file(rule.schema),
            "title": rule.schema,
            **body,
            "examples": [EXAMPLES[rule.schema]],
        }
    return out


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
