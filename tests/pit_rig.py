"""Shared by the pit's tests: a model of the test site and its table's view, the check
that every message is counted once, and a table's messages published to a real broker."""

from __future__ import annotations

import io
import ssl
import uuid
from pathlib import Path
from typing import Any

import aiomqtt

from table_controller.pit.model import PitModel
from table_controller.pit.views import TableView
from table_controller.rigs.broker import MosquittoBroker
from tests.test_pit_payloads import SITE, TABLE, enc, state, stats, status, topic

Message = tuple[str, bytes, bool]  # topic, payload, retain


def _model(**kwargs: Any) -> PitModel:
    return PitModel(site=SITE, **kwargs)


def _view(model: PitModel, table: str = TABLE) -> TableView:
    view = model.table(table)
    assert view is not None
    return view


def _consistent(model: PitModel) -> None:
    """Every message is accounted for exactly once."""
    assert model.messages == (
        model.accepted + model.duplicates + model.malformed + model.unexpected
    )


def _site() -> str:
    """A site of its own per test: the session broker keeps retained messages."""
    return f"e2e-{uuid.uuid4().hex[:10]}"


async def _publish(
    broker: MosquittoBroker,
    messages: list[Message],
    *,
    port: int | None = None,
    tls: ssl.SSLContext | None = None,
    username: str | None = None,
    password: str | None = None,
) -> None:
    """Publish as a table does: MQTT 5, QoS 1, each acknowledged by the broker."""
    async with aiomqtt.Client(
        broker.host,
        port or broker.port,
        protocol=aiomqtt.ProtocolVersion.V5,
        tls_context=tls,
        username=username,
        password=password,
    ) as client:
        for name, payload, retain in messages:
            await client.publish(name, payload, qos=1, retain=retain)


def _retained(site: str, table: str = TABLE) -> list[Message]:
    return [
        (topic("status", table, site), enc(status(table=table, site=site, depth=2)), True),
        (topic("state", table, site), enc(state(table=table, site=site, phase="dealing")), True),
        (topic("stats", table, site), enc(stats(table=table, site=site, rounds=77)), True),
    ]


class _Null(io.StringIO):
    """A console file that keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)


def _secret(path: Path, mode: int) -> Path:
    path.write_text("s3cret\n", encoding="utf-8")
    path.chmod(mode)
    return path
