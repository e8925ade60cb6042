"""The Starlette application: routes from the declared endpoints, errors as JSON."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from table_controller import __version__
from table_controller.recorder.errors import BadParameter, DatabaseUnavailable, UnknownTable
from table_controller.recorder.live import LiveHub
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.web.api import ENDPOINTS
from table_controller.recorder.web.params import Endpoint, openapi, parse_all


def _route(endpoint: Endpoint) -> Route:
    async def handle(request: Request) -> Response:
        try:
            args = parse_all(endpoint.params, request.query_params, request.path_params)
            result: Response = await endpoint.handler(request, args)
        except BadParameter as exc:
            return JSONResponse({"error": str(exc), "parameter": exc.name}, status_code=400)
        except UnknownTable as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except DatabaseUnavailable as exc:
            return JSONResponse({"error": f"database unavailable: {exc}"}, status_code=503)
        return result

    return Route(endpoint.path, handle, methods=["GET"])


def build_app(db: Backend, live: LiveHub, extra: list[Route] | None = None) -> Starlette:
    """The recorder's web app; ``extra`` routes (pages) join the API's."""
    document = openapi(ENDPOINTS, title="Casino War recorder", version=__version__)

    async def get_openapi(request: Request) -> Response:
        return JSONResponse(document)

    handler: Callable[[Request], Awaitable[Any]] = get_openapi
    routes = [_route(e) for e in ENDPOINTS] + [Route("/openapi.json", handler)] + (extra or [])
    app = Starlette(routes=routes)
    app.state.db = db
    app.state.live = live
    return app
