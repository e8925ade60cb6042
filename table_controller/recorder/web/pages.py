"""The four pages (floor, table, alerts, report), the CSV export and the sign-in form.

Each page is a template around one live region, a partial template of its
own; with ``?fragment=1`` a page answers only that partial, which is what
``live.js`` fetches when ``/api/live`` says something changed. The shift a
page shows is the last ``SHIFT_H`` hours unless ``from``/``to`` say otherwise.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from table_controller.engine.settlement import rfc3339
from table_controller.feed.payloads import rfc3339 as stored_time
from table_controller.recorder.csvcell import csv_text
from table_controller.recorder.errors import BadParameter
from table_controller.recorder.web import api, charts, views
from table_controller.recorder.web.auth import safe_next
from table_controller.recorder.web.data import PitData, parse_time
from table_controller.recorder.web.params import without_nul
from table_controller.recorder.web.users import UsersFile

HERE: Final = Path(__file__).parent
SHIFT_H: Final = 8
# The table page reads every round of its window and charts it by the hour: a week at
# most (168 bars). Longer windows are the report's.
TABLE_WINDOW: Final = timedelta(days=7)
LAST_ROUNDS: Final = 10
ALERTS_TICK_S: Final = 15  # the alerts page's "open for" ages without any change
REPORT_COLUMNS: Final = (
    *("site", "table", "rounds", "rounds_per_hour", "handle", "win", "hold", "theo"),
    *("ties", "wars", "surrenders", "voids"),
)


def _now() -> datetime:
    return datetime.now(UTC)


def templates() -> Jinja2Templates:
    t = Jinja2Templates(directory=HERE / "templates")
    t.env.filters["money"] = views.money
    t.env.filters["percent"] = views.percent
    t.env.filters["hhmm"] = lambda d: "-" if d is None else d.strftime("%H:%M:%S")
    t.env.filters["dash"] = lambda v: "-" if v is None else v
    return t


def _text(value: str, name: str) -> str:
    try:
        return without_nul(name, value)
    except BadParameter as exc:
        raise HTTPException(400, str(exc)) from exc


def _site(request: Request) -> str | None:
    site = request.query_params.get("site") or None
    return None if site is None else _text(site, "site")


def _csv_cell(value: object) -> object:
    return csv_text(value) if isinstance(value, str) else "" if value is None else value


def _csv_href(start: datetime, end: datetime, site: str | None) -> str:
    """The export of exactly what the report shows: the window to the microsecond (a
    round stored in the last fraction of a second counts), and the site."""
    query = {"from": rfc3339(start), "to": rfc3339(end)}
    if site is not None:
        query["site"] = site
    return f"/report.csv?{urlencode(query)}"


class Pages:
    def __init__(
        self, data: PitData, users: UsersFile, *, clock: Callable[[], datetime] = _now
    ) -> None:
        self.data = data
        self.users = users
        self.clock = clock
        self.t = templates()

    def routes(self) -> list[Route | Mount]:
        return [
            Route("/", self.floor, name="floor"),
            Route("/table/{site}/{table}", self.table, name="table"),
            Route("/alerts", self.alerts, name="alerts"),
            Route("/report", self.report, name="report"),
            Route("/report.csv", self.report_csv, name="report_csv"),
            Route("/login", self.login_form, methods=["GET"], name="login"),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"], name="logout"),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]

    def _page(self, request: Request, name: str, context: dict[str, Any]) -> Response:
        fragment = request.query_params.get("fragment") == "1"
        context |= {"user": request.scope.get("user_name"), "now": self.clock(), "page": name}
        context |= {"keepalive": api.LIVE_KEEPALIVE_S}  # the live stream's ping, in seconds
        template = f"_{name}.html" if fragment else f"{name}.html"
        return self.t.TemplateResponse(
            request, template, context, headers={"Cache-Control": "no-store"}
        )

    # -- floor ---------------------------------------------------------------

    async def floor(self, request: Request) -> Response:
        site = _site(request)
        now = self.clock()
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        entries = await self.data.tables(site)
        today = await self.data.report(site=site, start=midnight, end=now)
        rows = {(r.get("site"), r.get("table")): r for r in today.get("tables", ())}
        tiles = [views.tile(e, rows.get((e.get("site"), e.get("table")))) for e in entries]
        tiles.sort(key=lambda t: (not t.standing_out, t.site, t.table))
        return self._page(request, "floor", {"tiles": tiles, "site": site})

    # -- table ---------------------------------------------------------------

    async def table(self, request: Request) -> Response:
        site, table = (_text(request.path_params[k], k) for k in ("site", "table"))
        start, end = self._window(request)
        if end - start > TABLE_WINDOW:
            raise HTTPException(
                400, f"from: a table's page shows at most {TABLE_WINDOW.days} days; see the report"
            )
        entry = next((e for e in await self.data.tables(site) if e.get("table") == table), None)
        if entry is None:
            raise HTTPException(404, f"no table {table!r} at site {site!r}")
        last = await self.data.rounds(site, table, last=LAST_ROUNDS)
        shift = await self.data.rounds(site, table, start=start, end=end)
        # The shift's alerts: raised, resolved or open in it (docs/web.md, Table).
        lo, hi = stored_time(start), stored_time(end)
        alerts = [
            a
            for a in await self.data.alerts(site=site, table=table)
            if (a["raised"] or a["resolved"] or "") < hi
            and (a["resolved"] is None or a["resolved"] >= lo)
        ]
        seats = await self.data.sessions(site, table, start=start, end=end)
        context = {
            "findings": await self.data.findings(site, table),
            "sessions": [
                s | {"start_time": parse_time(s["start"])}
                for s in sorted(seats, key=lambda s: (s["position"], s["start"]))
            ],
            "tile": views.tile(entry, None),
            "layout": views.layout(entry.get("state")),
            "rounds": [views.round_row(r) for r in last],
            "alerts": [views.alert_row(a) for a in alerts],
            "pace_chart": charts.bar_chart(
                "Rounds per hour over the shift", views.rounds_per_hour(shift, start, end)
            ),
            "net_chart": charts.line_chart(
                "Players' net over the shift",
                [(t, float(v)) for t, v in views.net_over_time(shift)],
                lambda v: views.money(int(v)),
            ),
            "start": start,
            "end": end,
            "live_table": f"{site}/{table}",
        }
        return self._page(request, "table", context)

    # -- alerts --------------------------------------------------------------

    async def alerts(self, request: Request) -> Response:
        site = _site(request)
        rows = [views.alert_row(a) for a in await self.data.alerts(open_only=True, site=site)]
        critical = sorted((r for r in rows if r.critical), key=lambda r: r.raised or self.clock())
        now = self.clock()
        return self._page(
            request,
            "alerts",
            {
                "alerts": critical,
                "open_for": lambda r: views.open_for(r.raised, now),
                "tick": ALERTS_TICK_S,
            },
        )

    # -- report --------------------------------------------------------------

    async def _report(self, request: Request) -> tuple[dict[str, Any], datetime, datetime]:
        start, end = self._window(request)
        site = _site(request)
        return await self.data.report(site=site, start=start, end=end), start, end

    async def report(self, request: Request) -> Response:
        report, start, end = await self._report(request)
        site = _site(request)
        rows = report.get("tables") or []
        names = [str(r.get("table")) for r in rows]
        context = {
            "rows": rows,
            "total": report.get("total") or {},
            "start": start,
            "end": end,
            "query": request.url.query,
            "site": site,
            "csv_href": _csv_href(start, end, site),
            "win_chart": charts.bar_chart(
                "Win by table (house)",
                [(n, float(r.get("win") or 0)) for n, r in zip(names, rows, strict=True)],
                lambda v: views.money(int(v)),
            ),
            "pace_chart": charts.bar_chart(
                "Rounds per hour by table",
                [
                    (n, float(r.get("rounds_per_hour") or 0))
                    for n, r in zip(names, rows, strict=True)
                ],
                "{:.1f}".format,
            ),
        }
        return self._page(request, "report", context)

    async def report_csv(self, request: Request) -> Response:
        report, start, end = await self._report(request)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow([*REPORT_COLUMNS, "alerts_by_code"])
        total = {"site": "", "table": "TOTAL", **(report.get("total") or {})}
        for row in [*(report.get("tables") or []), total]:
            codes = row.get("alerts_by_code") or {}
            writer.writerow(
                [
                    *(_csv_cell(row.get(c)) for c in REPORT_COLUMNS),
                    csv_text(" ".join(f"{k}={v}" for k, v in sorted(codes.items()))),
                ]
            )
        name = f"shift-report-{start:%Y%m%dT%H%M}-{end:%Y%m%dT%H%M}.csv"
        return Response(
            out.getvalue(),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    def _window(self, request: Request) -> tuple[datetime, datetime]:
        """The shift: ``from``/``to`` (RFC 3339 or a form's local time, read as UTC)."""
        end = self._time(request, "to") or self.clock()
        try:
            start = self._time(request, "from") or end - timedelta(hours=SHIFT_H)
        except OverflowError:
            raise HTTPException(400, "to: the shift before it starts before year 1") from None
        if start >= end:
            raise HTTPException(400, "from: must be before to")
        return start, end

    @staticmethod
    def _time(request: Request, name: str) -> datetime | None:
        text = request.query_params.get(name)
        if not text:
            return None
        value = parse_time(text)
        if value is None:
            raise HTTPException(400, f"{name}: not a time; use 2026-12-01T06:00Z")
        return value

    # -- sign in and out -----------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        return self._login(request, error=None, status=200)

    def _login(self, request: Request, *, error: str | None, status: int) -> Response:
        context = {"next": safe_next(request.query_params.get("next")), "error": error}
        return self.t.TemplateResponse(request, "login.html", context, status_code=status)

    async def login(self, request: Request) -> Response:
        form = await request.form()
        name, password = str(form.get("name", "")), str(form.get("password", ""))
        # argon2 costs tens of milliseconds by design: that is the brake on guessing.
        if not self.users.verify(name, password):
            request.session.clear()
            return self._login(request, error="Wrong name or password.", status=401)
        request.session.clear()
        request.session["user"] = name
        request.session["seal"] = self.users.seal(name)  # a new password ends this session
        return RedirectResponse(safe_next(str(form.get("next", "/"))), status_code=303)

    async def logout(self, request: Request) -> Response:
        request.session.clear()
        return RedirectResponse("/login", status_code=303)
