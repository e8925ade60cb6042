"""``table-controller records sessions | pace | verify | export``: ratings and the records' chain.

Split from :mod:`table_controller.cli.records`, which dispatches to :func:`query_ratings`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from table_controller.recorder.store.backend import Backend

RATINGS: Final = frozenset({"sessions", "pace", "verify", "findings", "export", "purge"})


def configure_ratings(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], time: Callable[[str], datetime]
) -> None:
    sessions = sub.add_parser("sessions", help="seat sessions with their exact theo")
    sessions.add_argument("--site")
    sessions.add_argument("--table", help="only this table (with --site)")
    sessions.add_argument("--from", dest="start", type=time, help="RFC 3339 time")
    sessions.add_argument("--to", dest="end", type=time, help="RFC 3339 time")
    sessions.add_argument(
        "--end-after",
        type=int,
        default=3,
        help="rounds in a row without an initial wager that end a session (default 3)",
    )

    pace = sub.add_parser("pace", help="rounds per hour per table and per dealer")
    pace.add_argument("--site")
    pace.add_argument("--from", dest="start", type=time, help="RFC 3339 time")
    pace.add_argument("--to", dest="end", type=time, help="RFC 3339 time")
    sub.add_parser("verify", help="re-verify every round record's hash chain (exit 1 on a break)")
    findings = sub.add_parser("findings", help="every chain break ever found")
    findings.add_argument("--site")
    export = sub.add_parser(
        "export", help="round records for auditors: --json (the records) or --csv (a row each)"
    )
    export.add_argument("--site")
    export.add_argument("--from", dest="start", type=time, help="RFC 3339 time")
    export.add_argument("--to", dest="end", type=time, help="RFC 3339 time")

    purge = sub.add_parser(
        "purge",
        help="remove hand records older than the retention (run as the database's "
        "administrator: the recorder's role may not delete them)",
    )
    purge.add_argument(
        "--retention-years",
        type=int,
        help="default: the config's database.retention_years, else 5",
    )


def _retention(args: argparse.Namespace) -> int:
    from table_controller.recorder.config import RETENTION_YEARS, load_config

    if args.retention_years is not None:
        years: int = args.retention_years
        return years
    if args.config is not None:
        return load_config(args.config, broker_files=False).database.retention_years
    return RETENTION_YEARS


async def query_ratings(db: Backend, args: argparse.Namespace) -> Any:
    from table_controller.recorder.ratings import chain, export, pace
    from table_controller.recorder.ratings.sessions import sessions
    from table_controller.recorder.times import now_text

    if args.what == "sessions":
        if args.table is not None and args.site is None:
            raise SystemExit("table-controller records sessions: --table needs --site")
        return await sessions(
            db,
            site=args.site,
            table=args.table,
            start=args.start,
            end=args.end,
            end_after=args.end_after,
        )
    if args.what == "pace":
        return await pace.pace(db, site=args.site, start=args.start, end=args.end)
    if args.what == "verify":
        return await chain.verify_all(db, found=now_text())
    if args.what == "findings":
        return await chain.findings(db, site=args.site)
    if args.what == "export":
        return await export.export(db, site=args.site, start=args.start, end=args.end)
    if args.what == "purge":
        from datetime import UTC

        from table_controller.recorder.ratings.retention import purge

        return await purge(db, now=datetime.now(UTC), years=_retention(args))
    raise AssertionError(args.what)


def rows_of(what: str, data: Any) -> list[dict[str, Any]] | None:
    """The rows a table or CSV shows for ``what``, or None when ``records`` decides."""
    if what == "pace":
        return list(data["dealer_sessions"])
    if what == "verify":
        return list(data["breaks"]) or [{k: v for k, v in data.items() if k != "breaks"}]
    if what == "purge":
        return [{"cutoff": data["cutoff"]} | data["removed"]]
    if what == "export":
        from table_controller.recorder.ratings.export import csv_rows

        return csv_rows(data)
    return None
