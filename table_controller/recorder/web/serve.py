"""The web pit display as one ASGI app, and a way to serve it (with TLS when configured).

:func:`web_app` puts the pages in front of the recorder's JSON API (mounted
below them, so ``/api/…`` and ``/openapi.json`` answer as the API defines)
and the login gate in front of both. :func:`serve_web` runs an app under
uvicorn until its block ends, for the recorder process and the demo alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp

from table_controller.recorder.config import parse_listen
from table_controller.recorder.errors import DatabaseUnavailable
from table_controller.recorder.live import LiveHub
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.web.app import build_app
from table_controller.recorder.web.auth import LoginRequired, session_middleware
from table_controller.recorder.web.data import PitData
from table_controller.recorder.web.errors import TlsConfigError
from table_controller.recorder.web.pages import Pages, _now
from table_controller.recorder.web.pitdata import StorePitData
from table_controller.recorder.web.users import UsersFile

log = logging.getLogger(__name__)
STOP_TIMEOUT_S: Final = 5.0
GRACE_S: Final = 2  # for open live streams to end at stop


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the process that embeds it owns SIGINT/SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def web_middleware(users: UsersFile, *, https_only: bool = False) -> list[Middleware]:
    """Session, then the login gate: for an app that adds the pages to its own routes."""
    return [
        session_middleware(users, https_only=https_only),
        Middleware(LoginRequired, users=users),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    detail = getattr(exc, "detail", "error")
    return PlainTextResponse(f"{status}: {detail}\n", status_code=status)


AWAY_RETRY_S: Final = 5
_AWAY_PAGE: Final = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    f'<meta http-equiv="refresh" content="{AWAY_RETRY_S}">'
    "<title>Database unavailable</title></head><body>"
    "<p>503: the database is unavailable; this page tries again every "
    f"{AWAY_RETRY_S} s by itself.</p></body></html>\n"
)


async def _database_away(request: Request, exc: Exception) -> Response:
    # The recorder retries the database. An open page's live.js keeps its last figures on
    # screen until an answer comes back; a page opened meanwhile asks again by itself.
    log.warning("page %s: %s", request.url.path, exc)
    if request.url.path.startswith("/api/") or request.query_params.get("fragment"):
        return PlainTextResponse(
            "503: the database is unavailable; the page tries again by itself\n",
            status_code=503,
        )
    return HTMLResponse(_AWAY_PAGE, status_code=503, headers={"Retry-After": str(AWAY_RETRY_S)})


def web_app(
    data: PitData,
    users: UsersFile,
    *,
    api: ASGIApp | None = None,
    https_only: bool = False,
    clock: Callable[[], datetime] = _now,
) -> Starlette:
    """Pages, then the API (if given), all behind the login."""
    routes: list[BaseRoute] = list(Pages(data, users, clock=clock).routes())
    if api is not None:
        routes.append(Mount("", app=api))
    return Starlette(
        routes=routes,
        middleware=web_middleware(users, https_only=https_only),
        exception_handlers={
            400: _http_error,
            404: _http_error,
            DatabaseUnavailable: _database_away,
        },
    )


def tls_options(cert_file: str | Path | None, key_file: str | Path | None) -> dict[str, Any]:
    """uvicorn's TLS arguments for ``[http] cert_file``/``key_file``; {} for plain HTTP.

    Both or neither; each is loaded once here so that a bad file is named at
    start, not at the first browser's handshake.
    """
    if cert_file is None and key_file is None:
        return {}
    if cert_file is None or key_file is None:
        raise TlsConfigError("http: give both cert_file and key_file, or neither")
    for name, path in (("cert_file", cert_file), ("key_file", key_file)):
        if not Path(path).is_file():
            raise TlsConfigError(f"http.{name}: {path}: no such file")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(
            f"http: {cert_file} / {key_file}: not a certificate and its key: {exc}"
        ) from exc
    return {"ssl_certfile": str(cert_file), "ssl_keyfile": str(key_file)}


@contextlib.asynccontextmanager
async def serve_web(
    app: ASGIApp,
    host: str,
    port: int,
    *,
    cert_file: str | Path | None = None,
    key_file: str | Path | None = None,
) -> AsyncIterator[str]:
    """Serve ``app`` on ``host:port`` (0: a free port) until the block ends; yields the URL."""
    tls = tls_options(cert_file, key_file)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        # Live streams stay open: give them a moment to end, then close them.
        timeout_graceful_shutdown=GRACE_S,
        **tls,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(), name=f"web {host}:{port}")
    try:
        while not server.started:
            if task.done():
                task.result()  # the reason it could not start (port taken, …)
                raise OSError(f"web display on {host}:{port} stopped before it started")
            await asyncio.sleep(0.01)  # uvicorn has no started event to await
        bound = server.servers[0].sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        url = f"{'https' if tls else 'http'}://{shown}:{bound}"
        log.info("web pit display at %s", url)
        yield url
    finally:
        server.should_exit = True
        try:
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await task
        except TimeoutError:
            server.force_exit = True
            await asyncio.gather(task, return_exceptions=True)


def pit_app(db: Backend, live: LiveHub, users_file: str | Path, *, https_only: bool) -> Starlette:
    """The recorder's whole HTTP side: pit pages and JSON API over ``db``, behind logins."""
    users = UsersFile(users_file)
    return web_app(StorePitData(db), users, api=build_app(db, live), https_only=https_only)


@contextlib.asynccontextmanager
async def serve_pit(
    db: Backend,
    live: LiveHub,
    listen: str,
    users_file: str | Path,
    *,
    cert_file: str | Path | None = None,
    key_file: str | Path | None = None,
) -> AsyncIterator[str]:
    """Serve the pit pages and API of ``db`` on ``listen`` (``host:port``); yields the URL.

    ``live`` is the hub the recorder publishes its commits to, so that the
    pages hear of a change as soon as it is stored.
    """
    host, port = parse_listen(listen)
    tls = cert_file is not None or key_file is not None
    app = pit_app(db, live, users_file, https_only=tls)
    async with serve_web(app, host, port, cert_file=cert_file, key_file=key_file) as url:
        yield url
