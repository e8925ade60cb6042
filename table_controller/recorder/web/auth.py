"""Logins: a form, a signed session cookie, and a gate in front of every route.

A supervisor on a tablet expects a sign-in page, not the browser's Basic
dialog (which cannot sign out and looks like an error), so the pages use a
form. The session lives in Starlette's ``SessionMiddleware`` cookie, signed
with itsdangerous under the secret beside the users file; it holds only the
user's name, with a digest of their stored hash (so that a password changed
ends it), and expires after a shift and a half. Every route but the
sign-in page and its stylesheet needs a session: a page without one is sent
to the form, an ``/api`` call gets 401. Scripts may call ``/api`` with HTTP
Basic instead (the same users file), since they have no form to fill.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final
from urllib.parse import quote

from starlette.datastructures import URL
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from table_controller.recorder.web.users import UsersFile, session_secret

SESSION_MAX_AGE_S: Final = 12 * 3600
COOKIE: Final = "pit_session"
LOGIN_PATH: Final = "/login"
# Reachable without a session: the form itself and what it needs to look right.
OPEN_PATHS: Final = frozenset({LOGIN_PATH, "/static/pit.css", "/favicon.ico"})


def session_middleware(users: UsersFile, *, https_only: bool) -> Middleware:
    """The signed-cookie session, keyed by the secret beside the users file."""
    return Middleware(
        SessionMiddleware,
        secret_key=session_secret(users.path),
        session_cookie=COOKIE,
        max_age=SESSION_MAX_AGE_S,
        same_site="strict",
        https_only=https_only,
    )


class LoginRequired:
    """ASGI middleware: a request goes through only with a session or, on /api, Basic."""

    def __init__(self, app: ASGIApp, users: UsersFile) -> None:
        self.app = app
        self.users = users

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        user = request.session.get("user")
        if (
            isinstance(user, str)
            and self.users.knows(user)
            and request.session.get("seal") == self.users.seal(user)
        ):
            scope["user_name"] = user
            await self.app(scope, receive, send)
            return
        response: Response
        if scope["path"].startswith("/api/") or scope["path"] == "/openapi.json":
            if self._basic(request):
                await self.app(scope, receive, send)
                return
            response = JSONResponse(
                {"error": "sign in first (POST /login) or use HTTP Basic"},
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="pit", charset="UTF-8"'},
            )
        else:
            response = RedirectResponse(_login_url(request.url), status_code=303)
        await response(scope, receive, send)

    def _basic(self, request: Request) -> bool:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            name, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return bool(sep) and self.users.verify(name, password)


def _login_url(url: URL) -> str:
    target = url.path + (f"?{url.query}" if url.query else "")
    return f"{LOGIN_PATH}?next={quote(target, safe='')}"


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a path of this site only, never another host."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value
