"""Open alerts: a journal fault whose resolution never came (the table's power was cut
while it lasted, so what it sent from memory was never journaled) is not shown open once
the table's newer status says that its journal commits."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from table_controller.recorder import queries
from table_controller.recorder.intake import parse_message
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import store_batch
from tests.payload_samples import status_body
from tests.recorder.conftest import SITE

RAISED = "2026-03-01T20:00:00.000Z"
BEFORE, AFTER = "2026-03-01T19:59:00.000Z", "2026-03-01T20:05:00.000Z"


def _status(table: str, ts: str, journal: str) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": "table-status/1", "id": str(uuid.uuid4())}
    body |= {"table": table, "site": SITE, "ts": ts}
    body |= status_body(currency="USD", instance=str(uuid.uuid4()), started=ts)
    body |= {"journal": {"state": journal, "detail": None}}
    return body | {"feed": {"epoch": str(uuid.uuid4()), "last_feed_seq": 0}}


def _notice(table: str, code: str) -> dict[str, Any]:
    """An alert sent from memory: no feed_seq, no epoch (docs/feed.md)."""
    body: dict[str, Any] = {"schema": "table-alert/1", "id": str(uuid.uuid4())}
    body |= {"table": table, "site": SITE, "ts": RAISED, "feed_seq": None, "epoch": None}
    body |= {"alert": str(uuid.uuid4()), "code": code, "severity": "critical"}
    body |= {"message": "the journal cannot commit", "round_id": 3, "position": None}
    return body | {"spot": None, "resolved_by": None}


async def _store(db: Backend, *bodies: dict[str, Any], on: str | None = None) -> None:
    """Stored as received on each one's own table's topic (or table ``on``'s)."""
    for body in bodies:
        leaf = {"table-status/1": "status", "table-alert/1": "alerts"}[body["schema"]]
        topic = f"casino/{SITE}/table/{on or body['table']}/{leaf}"
        msg = parse_message(topic, json.dumps(body).encode())
        assert (msg.problem is None) == (on is None), msg.problem
        await store_batch(db, [msg], received=AFTER)


async def _open(db: Backend, table: str) -> list[str]:
    return [a["code"] for a in await queries.alerts(db, open_only=True) if a["table"] == table]


@pytest.mark.parametrize(
    ("status_ts", "journal", "still_open"),
    [
        (RAISED, "fault", True),  # the fault lasts
        (AFTER, "ok", False),  # the table is back, and says its journal commits
        (BEFORE, "ok", True),  # a status older than the fault says nothing of it
        (AFTER, "fault", True),  # a fault again after the restart: not over
    ],
)
async def test_a_journal_fault_without_its_resolution_closes_with_the_tables_status(
    db: Backend, status_ts: str, journal: str, still_open: bool
) -> None:
    table = f"t-{uuid.uuid4().hex[:8]}"
    fault = _notice(table, "JOURNAL_FAULT")
    await _store(db, fault, _notice(table, "DEVICE_OFFLINE"), _status(table, status_ts, journal))
    # Any other alert stays open until it is resolved, whatever the status says.
    assert sorted(await _open(db, table)) == (
        ["DEVICE_OFFLINE", "JOURNAL_FAULT"] if still_open else ["DEVICE_OFFLINE"]
    )
    (row,) = [t for t in await queries.tables(db) if t["table"] == table]
    assert row["open_critical_alerts"] == (2 if still_open else 1)
    # The history still holds what the table sent: a raise never resolved.
    (listed,) = [a for a in await queries.alerts(db) if a["alert"] == fault["alert"]]
    assert listed["raised"] is not None
    assert listed["resolved"] is None


async def test_a_status_on_another_tables_topic_neither_closes_a_fault_nor_is_its_status(
    db: Backend,
) -> None:
    table, other = (f"t-{uuid.uuid4().hex[:8]}" for _ in range(2))
    await _store(db, _notice(table, "JOURNAL_FAULT"), _status(table, RAISED, "fault"))
    # Another table's account, on its own topic, names this table and says all is well.
    await _store(db, _status(table, AFTER, "ok"), on=other)
    assert await _open(db, table) == ["JOURNAL_FAULT"]
    rows = {t["table"]: t for t in await queries.tables(db)}
    assert rows[table]["open_critical_alerts"] == 1
    assert other not in rows
    (status,) = await db.fetch(
        "SELECT payload FROM latest WHERE table_id = ? AND topic = 'status'", [table]
    )
    assert json.loads(status[0])["journal"]["state"] == "fault"
