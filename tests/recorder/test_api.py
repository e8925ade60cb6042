"""The JSON API over real HTTP (uvicorn), on data a recorder stored from light tables."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn

from bench.light_table import LightTable
from table_controller.recorder.live import LiveHub
from table_controller.recorder.process import ApiServer
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.subscriber import Recorder
from table_controller.recorder.web import api
from table_controller.recorder.web.app import build_app
from table_controller.rigs.broker import MosquittoBroker, free_port
from tests.recorder.conftest import SITE, dealing, recorder_config, running, unique

ROUNDS = 12


@dataclass
class Floor:
    http: httpx.AsyncClient
    tables: list[LightTable]
    live: LiveHub
    recorder: Recorder


@pytest.fixture
async def floor(mosquitto: MosquittoBroker, db_url: str, db: Backend) -> AsyncIterator[Floor]:
    live = LiveHub()
    recorder = Recorder(recorder_config(mosquitto, db_url).mqtt, db, live=live)
    port = free_port()
    server = ApiServer(
        uvicorn.Config(build_app(db, live), host="127.0.0.1", port=port, log_level="warning")
    )
    run = unique("api")
    tables = [
        LightTable(mosquitto.host, mosquitto.port, site=SITE, table=f"t{i}-{run}", seed=i)
        for i in range(2)
    ]
    web = asyncio.create_task(server.serve(), name="test-http")
    async with (
        running(recorder),
        dealing(*tables),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http,
    ):
        for _ in range(ROUNDS):
            for t in tables:
                t.deal_round()
        await asyncio.gather(*(t.wait_acked(30) for t in tables))
        yield Floor(http, tables, live, recorder)
        server.should_exit = True
        await web


async def test_tables_and_rounds(floor: Floor) -> None:
    got = (await floor.http.get("/api/tables")).json()
    names = {t["table"] for t in got}
    assert {t.table for t in floor.tables} <= names
    mine = next(t for t in got if t["table"] == floor.tables[0].table)
    assert mine["status"]["online"] is True
    table = floor.tables[0].table
    rounds = (await floor.http.get(f"/api/tables/{SITE}/{table}/rounds?last=5")).json()
    assert [r["round_id"] for r in rounds] == [12, 11, 10, 9, 8]
    first, last = floor.tables[0].rounds[0], floor.tables[0].rounds[2]
    window = await floor.http.get(
        f"/api/tables/{SITE}/{table}/rounds",
        params={"from": first["ended"], "to": last["ended"]},
    )
    assert [r["round_id"] for r in window.json()] == [2, 1]


async def test_one_round_is_reconstructed(floor: Floor) -> None:
    table = floor.tables[1]
    record = table.rounds[3]
    got = await floor.http.get(f"/api/tables/{SITE}/{table.table}/rounds/{table.epoch}/4")
    body = got.json()
    assert body["record"]["id"] == record["id"]
    cards = body["reconstruction"]["cards"]
    assert [c["n"] for c in cards] == list(range(1, len(record["cards"]) + 1))
    burns = [c for c in cards if c["role"] == "burn"]
    assert burns
    assert all(c["card"] is None for c in burns)  # §(h)(1): never a burn card's rank
    dealt = {(c["role"], c["position"], c["card"]) for c in cards if c["role"] != "burn"}
    assert dealt == {
        (c["role"], c["position"], c["card"]) for c in record["cards"] if c["role"] != "burn"
    }


async def test_report_totals_are_the_sums_of_the_stored_records(floor: Floor) -> None:
    body = (await floor.http.get("/api/report", params={"site": SITE})).json()
    ours = {t.table for t in floor.tables}
    records = [r for t in floor.tables for r in t.rounds]
    for table in floor.tables:
        row = next(r for r in body["tables"] if r["table"] == table.table)
        assert row["rounds"] == ROUNDS
        assert row["win"] == -sum(r["net"] for r in table.rounds)
    mine = [r for r in body["tables"] if r["table"] in ours]
    handle = sum(w["amount"] for r in records for p in r["positions"] for w in p["wagers"])
    assert sum(r["handle"] for r in mine) == handle
    ties = sum(p["outcome"] == "tie" for r in records for p in r["positions"])
    assert sum(r["ties"] for r in mine) == ties
    assert sum(r["surrenders"] for r in mine) == ties  # the light tables surrender every tie
    total = body["total"]
    for key in ("rounds", "handle", "win", "ties", "wars", "surrenders", "voids"):
        assert total[key] == sum(r[key] for r in body["tables"])
    assert total["hold"] == pytest.approx(total["win"] / total["handle"])


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("last=abc", "last"),
        ("last=0", "last"),
        ("from=yesterday", "from"),
        ("from=2026-01-01T00:00:00", "from"),
        ("last=3&from=2026-01-01T00:00:00Z", "last"),
        ("colour=red", "colour"),
        ("last=%C2%B2", "last"),  # "²": a digit to str.isdigit(), not to int()
        ("last=--5", "last"),
        ("last=" + "9" * 5000, "last"),  # past the digits int() converts at all
    ],
)
async def test_bad_parameters_get_400_naming_them(floor: Floor, query: str, parameter: str) -> None:
    table = floor.tables[0].table
    got = await floor.http.get(f"/api/tables/{SITE}/{table}/rounds?{query}")
    assert got.status_code == 400
    assert got.json()["parameter"] == parameter
    assert parameter in got.json()["error"]


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/api/alerts?site=a%00b", "site"),
        ("/api/report?site=a%00b", "site"),
        (f"/api/tables/{SITE}%00/t/rounds", "site"),
        (f"/api/tables/{SITE}/t%00/rounds", "table"),
        (f"/api/tables/{SITE}/t/rounds/e%00/1", "epoch"),
    ],
)
async def test_a_nul_character_is_a_bad_parameter_on_every_database(
    floor: Floor, path: str, parameter: str
) -> None:
    got = await floor.http.get(path)
    assert got.status_code == 400, got.text
    assert got.json()["parameter"] == parameter
    assert "NUL" in got.json()["error"]


@pytest.mark.parametrize("round_id", [2**53, 2**63, 10**20])
async def test_a_round_id_beyond_the_feeds_largest_is_a_bad_parameter(
    floor: Floor, round_id: int
) -> None:
    got = await floor.http.get(f"/api/tables/{SITE}/{floor.tables[0].table}/rounds/e/{round_id}")
    assert got.status_code == 400, got.text
    assert got.json()["parameter"] == "round_id"


async def test_a_window_bound_finer_than_a_millisecond_keeps_its_place(floor: Floor) -> None:
    """[from, to) holds at the microsecond: a bound inside a stored time's millisecond is
    not cut down to it (the round ended before ``from`` stays out, before ``to`` in)."""
    table = floor.tables[0]
    record = table.rounds[len(table.rounds) // 2]
    ended = record["ended"]
    assert ended.endswith("Z")
    assert len(ended) == len("2026-01-31T22:00:00.000Z")
    just_after = ended[:-1] + "5Z"  # half a millisecond after the round ended
    url = f"/api/tables/{SITE}/{table.table}/rounds"

    async def ids(start: str, end: str) -> set[int]:
        got = await floor.http.get(url, params={"from": start, "to": end})
        assert got.status_code == 200, got.text
        return {r["round_id"] for r in got.json()}

    assert record["round_id"] not in await ids(just_after, "2100-01-01T00:00:00Z")
    assert record["round_id"] in await ids(ended, just_after)
    report = await floor.http.get("/api/report", params={"site": SITE, "from": just_after})
    assert report.json()["from"] > ended


async def test_a_window_answers_at_most_as_many_rounds_as_last_may(
    floor: Floor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window holding more rounds than ``last`` may ask for is a 400 naming ``from``, not
    every record of the table at once (the cap is lowered here to what the floor holds)."""
    monkeypatch.setattr(api, "MAX_ROUNDS", ROUNDS - 1)
    url = f"/api/tables/{SITE}/{floor.tables[0].table}/rounds"
    whole = await floor.http.get(url, params={"from": "2000-01-01T00:00:00Z"})
    assert whole.status_code == 400, whole.text
    assert whole.json()["parameter"] == "from"
    last = floor.tables[0].rounds[-1]["ended"]
    part = await floor.http.get(url, params={"from": floor.tables[0].rounds[1]["ended"]})
    assert part.status_code == 200, part.text
    assert len(part.json()) == ROUNDS - 1
    assert part.json()[0]["ended"] == last


async def test_unknown_table_is_404_and_alerts_report_gaps_answer(floor: Floor) -> None:
    assert (await floor.http.get(f"/api/tables/{SITE}/nope/rounds")).status_code == 404
    assert (await floor.http.get("/api/alerts?open=maybe")).json()["parameter"] == "open"
    assert (await floor.http.get("/api/alerts?open=true")).status_code == 200
    gaps = (await floor.http.get("/api/gaps")).json()
    mine = [g for g in gaps if g["table"] == floor.tables[0].table]
    assert mine[0]["contiguous_feed_seq"] == floor.tables[0].last_feed_seq
    assert mine[0]["pending"] == []


async def test_openapi_document_lists_every_endpoint(floor: Floor) -> None:
    doc = (await floor.http.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) == {
        "/api/tables",
        "/api/tables/{site}/{table}/rounds",
        "/api/tables/{site}/{table}/rounds/{epoch}/{round_id}",
        "/api/alerts",
        "/api/report",
        "/api/gaps",
        "/api/live",
        "/api/sessions",
        "/api/pace",
        "/api/findings",
    }
    params = {p["name"] for p in doc["paths"]["/api/report"]["get"]["parameters"]}
    assert params == {"site", "from", "to"}


async def test_live_stream_sends_each_committed_change(floor: Floor) -> None:
    table = floor.tables[0]
    async with floor.http.stream("GET", "/api/live") as stream:
        lines = stream.aiter_lines()
        assert (await anext(lines)).startswith(":")  # the stream is open: now deal
        record = table.deal_round()
        async with asyncio.timeout(30):
            async for line in lines:
                if line.startswith("data:"):
                    change = json.loads(line.removeprefix("data:"))
                    if change["topic"] == "rounds" and change["id"] == record["id"]:
                        break
    # A live feed carries a burn card without its rank (docs/rules.md §(h)(1)); the stored
    # record, which auditors read, keeps it.
    burns = [c for c in record["cards"] if c["role"] == "burn"]
    assert burns
    assert all(c["card"] for c in burns)
    live_cards = {c["n"]: c["card"] for c in change["payload"]["cards"]}
    assert all(live_cards[c["n"]] is None for c in burns)
    others = [c for c in record["cards"] if c["role"] != "burn"]
    assert all(live_cards[c["n"]] == c["card"] for c in others)
    stored = await floor.http.get(
        f"/api/tables/{SITE}/{table.table}/rounds/{table.epoch}/{record['round_id']}"
    )
    assert [c["card"] for c in stored.json()["record"]["cards"]] == [
        c["card"] for c in record["cards"]
    ]
