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
from collections.abc import Callable
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
BASIC: Final = 'Basic realm="pit", charset="UTF-8"'
LOGIN_PATH: Final = "/login"
# Reachable without a session: the form itself and what it needs to look right.
OPEN_PATHS: Final = frozenset({LOGIN_PATH, "/static/pit.css", "/favicon.ico"})
# The scope key of a callable: whether the request's user may still read (a stream).
STILL_SIGNED_IN: Final = "pit.still_signed_in"


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
            scope[STILL_SIGNED_IN] = self._still(user)
            await self.app(scope, receive, send)
            return
        response: Response
        if scope["path"].startswith("/api/") or scope["path"] == "/openapi.json":
            name = self._basic(request)
            if name is not None:
                scope[STILL_SIGNED_IN] = self._still(name)
                await self.app(scope, receive, send)
                return
            # A browser that signed in with the form (its session cookie shows it) is not
            # asked for Basic: it would prompt over the page, or, for the page's live
            # stream, wait on that prompt for ever instead of failing back to the page.
            challenge = {} if _from_a_page(request) else {"WWW-Authenticate": BASIC}
            response = JSONResponse(
                {"error": "sign in first (POST /login) or use HTTP Basic"},
                status_code=401,
                headers=challenge,
            )
        else:
            response = RedirectResponse(_login_url(request.url), status_code=303)
        await response(scope, receive, send)

    def _basic(self, request: Request) -> str | None:
        """The user HTTP Basic names with the right password, else None."""
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            name, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return name if sep and self.users.verify(name, password) else None

    def _still(self, name: str) -> Callable[[], bool]:
        """Whether ``name`` may still read what this request streams (the live feed): not
        once removed from the users file, nor once their password changed."""
        seal = self.users.seal(name)
        return lambda: self.users.knows(name) and self.users.seal(name) == seal


def _from_a_page(request: Request) -> bool:
    """Asked by a browser that signed in with the form (its session cookie), or by a page's
    own script (a fetch, the live stream): either would put a Basic dialog over the page,
    or hold the stream on one, after a sign-out in another tab."""
    script = request.headers.get("sec-fetch-site") == "same-origin" and (
        request.headers.get("sec-fetch-mode") != "navigate"
    )
    return COOKIE in request.cookies or script


def _login_url(url: URL) -> str:
    target = url.path + (f"?{url.query}" if url.query else "")
    return f"{LOGIN_PATH}?next={quote(target, safe='')}"


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a path of this site only, never another host."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value
