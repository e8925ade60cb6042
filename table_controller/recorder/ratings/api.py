"""``/api/sessions``, ``/api/pace`` and ``/api/findings`` (``docs/recorder.md``)."""

from __future__ import annotations

from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from table_controller.recorder.errors import BadParameter
from table_controller.recorder.ratings.chain import findings
from table_controller.recorder.ratings.pace import pace
from table_controller.recorder.ratings.sessions import END_AFTER_EMPTY, sessions
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.web.params import Endpoint, Param

SITE: Final = Param("site", "string", "only this site")
TABLE: Final = Param("table", "string", "only this table (with site)")
FROM: Final = Param("from", "date-time", "rounds ended at or after this time")
TO: Final = Param("to", "date-time", "... and before this time")
END_AFTER: Final = Param(
    "end_after",
    "integer",
    f"a session ends after this many rounds in a row without an initial wager "
    f"(default {END_AFTER_EMPTY})",
    minimum=1,
    maximum=1000,
)


def _db(request: Request) -> Backend:
    db: Backend = request.app.state.db
    return db


def check_window(args: dict[str, Any]) -> None:
    if "from" in args and "to" in args and args["to"] <= args["from"]:
        raise BadParameter("to", "must be after from")


async def get_sessions(request: Request, args: dict[str, Any]) -> Response:
    check_window(args)
    if "table" in args and "site" not in args:
        raise BadParameter("site", "name the site of the table")
    found = await sessions(
        _db(request),
        site=args.get("site"),
        table=args.get("table"),
        start=args.get("from"),
        end=args.get("to"),
        end_after=args.get("end_after", END_AFTER_EMPTY),
    )
    return JSONResponse(found)


async def get_pace(request: Request, args: dict[str, Any]) -> Response:
    check_window(args)
    found = await pace(
        _db(request), site=args.get("site"), start=args.get("from"), end=args.get("to")
    )
    return JSONResponse(found)


async def get_findings(request: Request, args: dict[str, Any]) -> Response:
    return JSONResponse(await findings(_db(request), site=args.get("site")))


ENDPOINTS: Final = (
    Endpoint(
        "/api/sessions",
        "seat sessions with their exact theo",
        (SITE, TABLE, FROM, TO, END_AFTER),
        get_sessions,
    ),
    Endpoint(
        "/api/pace",
        "rounds per hour per table, per dealer session and per dealer",
        (SITE, FROM, TO),
        get_pace,
    ),
    Endpoint(
        "/api/findings",
        "every break found in the round records' hash chain (permanent)",
        (SITE,),
        get_findings,
    ),
)
