"""The pit's HTTP side over a real socket: the login gate, sessions, Basic on /api, TLS."""

from __future__ import annotations

import asyncio
import base64
import html
import re
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from bench.pg_server import PostgresServer
from table_controller.recorder.live import LiveHub
from table_controller.recorder.store.backend import Backend, migrate, open_backend
from table_controller.recorder.web.errors import TlsConfigError
from table_controller.recorder.web.serve import serve_pit, tls_options
from table_controller.recorder.web.users import add_user, remove_user
from tests.web.harness import PASSWORD, USER, make_users


@dataclass
class Store:
    db: Backend
    users: Path


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    db = open_backend(f"sqlite://{tmp_path}/recorder.db")
    await migrate(db)
    yield Store(db, make_users(tmp_path / "pit-users"))
    await db.close()


@asynccontextmanager
async def _client(
    store: Store, *, cert: Path | None = None, key: Path | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the pit served from ``store`` (over TLS with ``cert``)."""
    trust: ssl.SSLContext | bool = True
    if cert is not None:
        trust = ssl.create_default_context(cafile=str(cert))
    listen = "127.0.0.1:0"
    async with (
        serve_pit(store.db, LiveHub(), listen, store.users, cert_file=cert, key_file=key) as url,
        httpx.AsyncClient(base_url=url, verify=trust) as client,
    ):
        yield client


def _basic(name: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


async def test_every_route_needs_a_login_and_a_wrong_password_is_refused(
    store: Store,
) -> None:
    async with _client(store) as client:
        for path in ("/", "/alerts", "/report", "/report.csv", "/table/s/t"):
            answer = await client.get(path)
            assert answer.status_code == 303, path
            assert answer.headers["location"].startswith("/login?next=")
        for path in ("/api/tables", "/api/live", "/openapi.json"):
            assert (await client.get(path)).status_code == 401, path
        assert (await client.get("/login")).status_code == 200
        assert (await client.get("/static/pit.css")).status_code == 200

        wrong = await client.post("/login", data={"name": USER, "password": "nope-nope"})
        assert wrong.status_code == 401
        assert "Wrong name or password" in wrong.text
        assert "pit_session" not in client.cookies or (await client.get("/")).status_code == 303
        unknown = await client.post("/login", data={"name": "mallory", "password": PASSWORD})
        assert unknown.status_code == 401

        right = await client.post(
            "/login", data={"name": USER, "password": PASSWORD, "next": "/alerts"}
        )
        assert (right.status_code, right.headers["location"]) == (303, "/alerts")
        assert (await client.get("/api/tables")).json() == []
        floor = await client.get("/")
        assert floor.status_code == 200
        assert "No table has reported yet" in floor.text
        assert (await client.get("/table/nowhere/none")).status_code == 404
        assert (await client.get("/report?from=yesterday")).status_code == 400

        await client.post("/logout")
        assert (await client.get("/api/tables")).status_code == 401


async def test_api_takes_http_basic_and_sign_in_never_leaves_the_site(
    store: Store,
) -> None:
    async with _client(store) as client:
        assert (await client.get("/api/tables", headers=_basic(USER, PASSWORD))).status_code == 200
        assert (await client.get("/api/tables", headers=_basic(USER, "x"))).status_code == 401
        # Basic opens the API only: the pages want the form's session.
        assert (await client.get("/", headers=_basic(USER, PASSWORD))).status_code == 303
        for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
            answer = await client.post(
                "/login", data={"name": USER, "password": PASSWORD, "next": target}
            )
            assert answer.headers["location"] == "/"


def _self_signed(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "pit.pem", folder / "pit.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_tls_when_configured_with_a_secure_session_cookie(
    store: Store, tmp_path: Path
) -> None:
    cert, key = _self_signed(tmp_path)
    async with _client(store, cert=cert, key=key) as client:
        assert str(client.base_url).startswith("https://")
        answer = await client.post("/login", data={"name": USER, "password": PASSWORD})
        assert answer.status_code == 303
        assert "secure" in answer.headers["set-cookie"].lower()
        assert (await client.get("/api/tables")).status_code == 200


def test_a_bad_certificate_or_key_is_named_at_start(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    assert tls_options(None, None) == {}
    with pytest.raises(TlsConfigError, match="both cert_file and key_file"):
        tls_options(cert, None)
    with pytest.raises(TlsConfigError, match=r"missing\.pem: no such file"):
        tls_options(tmp_path / "missing.pem", key)
    with pytest.raises(TlsConfigError, match="not a certificate and its key"):
        tls_options(key, key)


async def test_a_user_removed_from_the_file_is_out_at_the_next_request(store: Store) -> None:
    async with _client(store) as client:
        await client.post("/login", data={"name": USER, "password": PASSWORD})
        assert (await client.get("/api/tables")).status_code == 200
        add_user(store.users, "second", "another-password")
        remove_user(store.users, USER)
        assert (await client.get("/api/tables")).status_code == 401
        assert (await client.get("/")).status_code == 303
        assert (
            await client.get("/api/tables", headers=_basic("second", "another-password"))
        ).status_code == 200


async def test_only_a_client_outside_a_page_is_asked_for_basic(store: Store) -> None:
    """A page's script (its live stream, its fetches) signed out in another tab, or a
    browser with a session no longer valid, is not sent a Basic challenge: it would put a
    dialog over the page, or hold the stream on one. A script elsewhere is."""
    page_script = {"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors"}
    async with _client(store) as client:
        plain = await client.get("/api/live")
        assert (plain.status_code, "www-authenticate" in plain.headers) == (401, True)
        scripted = await client.get("/api/live", headers=page_script)
        assert (scripted.status_code, "www-authenticate" in scripted.headers) == (401, False)
        await client.post("/login", data={"name": USER, "password": PASSWORD})
        remove_user(store.users, USER)
        stale = await client.get("/api/tables")
        assert (stale.status_code, "www-authenticate" in stale.headers) == (401, False)


async def test_a_password_changed_ends_the_sessions_opened_with_the_old_one(
    store: Store,
) -> None:
    async with _client(store) as client:
        await client.post("/login", data={"name": USER, "password": PASSWORD})
        assert (await client.get("/api/tables")).status_code == 200
        add_user(store.users, USER, "a-new-password")  # the same name, a new password
        assert (await client.get("/api/tables")).status_code == 401
        assert (await client.get("/")).status_code == 303
        await client.post("/login", data={"name": USER, "password": "a-new-password"})
        assert (await client.get("/api/tables")).status_code == 200


async def test_the_csv_link_exports_exactly_the_window_and_site_the_report_shows(
    store: Store,
) -> None:
    """A round in the last fraction of a second, or at another site, changes the totals:
    the link carries the window to the microsecond, and the site."""
    async with _client(store) as client:
        await client.post("/login", data={"name": USER, "password": PASSWORD})
        shown = "from=2026-01-31T22:00:00.250000Z&to=2026-02-01T06:00:00.999999Z&site=floor-2"
        page = await client.get(f"/report?{shown}")
        assert page.status_code == 200
        (href,) = re.findall(r'href="(/report\.csv\?[^"]*)"', page.text)
        query = parse_qs(urlsplit(html.unescape(href)).query)
        assert query == {
            "from": ["2026-01-31T22:00:00.250000Z"],
            "to": ["2026-02-01T06:00:00.999999Z"],
            "site": ["floor-2"],
        }
        assert (await client.get(html.unescape(href))).status_code == 200


async def test_a_page_opened_while_the_database_is_away_comes_back_by_itself(
    tmp_path: Path,
) -> None:
    """The 503 page itself asks again (a browser follows its refresh), so a tab opened
    during an outage shows the floor once the database is back, with nobody at it."""
    with PostgresServer() as postgres:
        db = open_backend(postgres.create_database())
        await migrate(db)
        try:
            async with _client(Store(db, make_users(tmp_path / "pit-users"))) as client:
                await client.post("/login", data={"name": USER, "password": PASSWORD})
                assert (await client.get("/")).status_code == 200
                await asyncio.to_thread(postgres.stop)
                away = await client.get("/")
                assert away.status_code == 503
                assert away.headers["content-type"].startswith("text/html")
                refresh = re.search(r'<meta http-equiv="refresh" content="(\d+)"', away.text)
                assert refresh is not None
                assert 0 < int(refresh.group(1)) <= 10
                assert (await client.get("/api/tables")).status_code == 503
                await asyncio.to_thread(postgres.start)
                # The page's next refresh, with the database back (pg_ctl start waits for it).
                assert (await client.get("/")).status_code == 200
        finally:
            await db.close()


async def test_a_time_out_of_range_is_a_bad_parameter_not_a_failure(store: Store) -> None:
    async with _client(store) as client:
        await client.post("/login", data={"name": USER, "password": PASSWORD})
        for path in (
            "/report?to=0001-01-01T05:00",  # the shift before it starts before year 1
            "/report.csv?to=0001-01-01T05:00",
            "/table/s/t?to=0001-01-01T05:00",
            "/report?from=0001-01-01T00:00%2B01:00&to=2026-01-01T00:00Z",
            "/api/report?from=0001-01-01T00:00%2B01:00&to=2026-01-01T00:00Z",
        ):
            answer = await client.get(path)
            assert answer.status_code == 400, (path, answer.status_code, answer.text[:200])


async def test_a_tables_page_refuses_a_window_longer_than_it_can_chart(store: Store) -> None:
    """It reads every round of the window and charts it by the hour, on the recorder's own
    event loop: a century of hours would hold the feed for minutes."""
    async with _client(store) as client:
        await client.post("/login", data={"name": USER, "password": PASSWORD})
        answer = await client.get("/table/s/t?from=1900-01-01T00:00Z&to=2026-01-01T00:00Z")
        assert answer.status_code == 400, answer.text[:200]
        assert "at most 7 days" in answer.text
        week = await client.get("/table/s/t?from=2026-01-01T00:00Z&to=2026-01-08T00:00Z")
        assert week.status_code == 404  # a week is shown, for a table that exists


@pytest.fixture
async def pg_store(tmp_path: Path) -> AsyncIterator[Store]:
    with PostgresServer() as postgres:
        db = open_backend(postgres.create_database())
        await migrate(db)
        try:
            yield Store(db, make_users(tmp_path / "pit-users"))
        finally:
            await db.close()


async def test_a_nul_character_in_the_address_is_a_bad_request_on_postgresql(
    pg_store: Store,
) -> None:
    """PostgreSQL's text holds no NUL: the address is refused before any query is made."""
    async with _client(pg_store) as client:
        await client.post("/login", data={"name": USER, "password": PASSWORD})
        for path in (
            "/?site=a%00b",
            "/alerts?site=a%00b",
            "/report?site=a%00b",
            "/report.csv?site=a%00b",
            "/table/a%00b/t",
            "/table/s/t%00",
        ):
            answer = await client.get(path)
            assert answer.status_code == 400, (path, answer.status_code, answer.text[:200])
            assert "NUL" in answer.text, path
        assert (await client.get("/?site=ab")).status_code == 200
