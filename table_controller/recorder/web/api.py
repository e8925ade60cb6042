"""The JSON API of ``docs/recorder.md`` (``/api/…``), read-only, over :mod:`queries`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from table_controller.recorder import queries
from table_controller.recorder.errors import BadParameter
from table_controller.recorder.live import LiveHub
from table_controller.recorder.ratings import api as ratings_api
from table_controller.recorder.report import report
from table_controller.recorder.storable import LARGEST
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.web.auth import STILL_SIGNED_IN
from table_controller.recorder.web.params import Endpoint, Param

LIVE_KEEPALIVE_S: Final = 15.0
PING: Final = b"event: ping\ndata: {}\n\n"
MAX_ROUNDS: Final = 10_000

SITE = Param("site", "string", "the site", where="path")
TABLE = Param("table", "string", "the table id", where="path")
EPOCH = Param("epoch", "string", "the table journal's epoch", where="path")
# At most the feed's largest whole number: a greater one is no stored round, and is more
# than a database's integer holds.
ROUND_ID = Param("round_id", "integer", "the round's id", where="path", minimum=1, maximum=LARGEST)
LAST = Param("last", "integer", "the newest N rounds", minimum=1, maximum=MAX_ROUNDS)
FROM = Param("from", "date-time", "rounds (or alerts) ended at or after this time")
TO = Param("to", "date-time", "... and before this time")
OPEN = Param("open", "boolean", "only alerts not resolved yet")
SITE_Q = Param("site", "string", "only this site")


def _db(request: Request) -> Backend:
    db: Backend = request.app.state.db
    return db


def _json(data: Any) -> Response:
    return JSONResponse(data)


async def get_tables(request: Request, args: dict[str, Any]) -> Response:
    return _json(await queries.tables(_db(request)))


async def get_rounds(request: Request, args: dict[str, Any]) -> Response:
    if "last" in args and ("from" in args or "to" in args):
        raise BadParameter("last", "give either last or from/to, not both")
    if "from" in args and "to" in args and args["to"] <= args["from"]:
        raise BadParameter("to", "must be after from")
    window = "from" in args or "to" in args
    # A window answers at most MAX_ROUNDS records, as ``last`` does: a century-long one
    # would build every record of the table at once on the loop that stores the feed.
    last = args.get("last", MAX_ROUNDS + 1 if window else 100)
    found = await queries.rounds(
        _db(request),
        args["site"],
        args["table"],
        last=last,
        start=args.get("from"),
        end=args.get("to"),
    )
    if window and len(found) > MAX_ROUNDS:
        raise BadParameter(
            "from",
            f"the window holds more than {MAX_ROUNDS} rounds: narrow it, or read them with"
            " table-controller records rounds",
        )
    return _json(found)


async def get_round(request: Request, args: dict[str, Any]) -> Response:
    found = await queries.one_round(
        _db(request), args["site"], args["table"], args["epoch"], args["round_id"]
    )
    if found is None:
        return JSONResponse({"error": "no such round"}, status_code=404)
    return _json(found)


async def get_alerts(request: Request, args: dict[str, Any]) -> Response:
    found = await queries.alerts(
        _db(request), open_only=args.get("open", False), site=args.get("site")
    )
    return _json(found)


async def get_report(request: Request, args: dict[str, Any]) -> Response:
    if "from" in args and "to" in args and args["to"] <= args["from"]:
        raise BadParameter("to", "must be after from")
    found = await report(
        _db(request), site=args.get("site"), start=args.get("from"), end=args.get("to")
    )
    return _json(found)


async def get_gaps(request: Request, args: dict[str, Any]) -> Response:
    return _json(await queries.gaps(_db(request)))


async def get_live(request: Request, args: dict[str, Any]) -> Response:
    hub: LiveHub = request.app.state.live
    queue = hub.listen()
    # Signed in when the stream opened is not signed in for ever: a user removed from the
    # users file, or whose password changed, hears nothing more (docs/web.md).
    allowed: Callable[[], bool] = request.scope.get(STILL_SIGNED_IN) or (lambda: True)

    async def stream() -> AsyncIterator[bytes]:
        try:
            yield b": live\n\n"
            while allowed():
                try:
                    # asyncio.timeout: wait_for (3.11) can swallow the cancel of a client gone.
                    async with asyncio.timeout(LIVE_KEEPALIVE_S):
                        change = await queue.get()
                except TimeoutError:
                    # An event the page sees: one that stops coming is a link gone silent.
                    yield PING
                    continue
                if not allowed():
                    break
                data = json.dumps(change, separators=(",", ":"))
                yield f"event: {change['topic']}\ndata: {data}\n\n".encode()
        finally:
            hub.leave(queue)

    return StreamingResponse(stream(), media_type="text/event-stream")


ENDPOINTS: Final = (
    Endpoint("/api/tables", "every table: latest status, state, stats", (), get_tables),
    Endpoint(
        "/api/tables/{site}/{table}/rounds",
        "war-round/1 records, newest first (default: the last 100; a window holding more"
        f" than {MAX_ROUNDS:,} is a 400)",
        (SITE, TABLE, LAST, FROM, TO),
        get_rounds,
    ),
    Endpoint(
        "/api/tables/{site}/{table}/rounds/{epoch}/{round_id}",
        "one record and its reconstruction (§(i)(4))",
        (SITE, TABLE, EPOCH, ROUND_ID),
        get_round,
    ),
    Endpoint("/api/alerts", "alerts with raise and resolve times", (OPEN, SITE_Q), get_alerts),
    Endpoint("/api/report", "the shift report per table and total", (SITE_Q, FROM, TO), get_report),
    Endpoint("/api/gaps", "per table and epoch: pending and permanent feed gaps", (), get_gaps),
    *ratings_api.ENDPOINTS,
    Endpoint(
        "/api/live", "Server-Sent Events: every committed change", (), get_live, "text/event-stream"
    ),
)
