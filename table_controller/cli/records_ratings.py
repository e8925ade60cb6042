"""``table-controller records sessions | pace | verify | export``: ratings and the records' chain.

Split from :mod:`table_controller.cli.records`, which dispatches to :func:`query_ratings`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from table_controller.recorder.store.backend import Backend

RATINGS: Final = frozenset({"sessions"})


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


async def query_ratings(db: Backend, args: argparse.Namespace) -> Any:
    from table_controller.recorder.ratings.sessions import sessions

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
    raise AssertionError(args.what)
