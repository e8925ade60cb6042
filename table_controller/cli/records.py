"""``table-controller records``: the recorder's database from a terminal (``--json``, ``--csv``).

The same queries as the JSON API, against the database of ``--database`` or of
a recorder's ``--config``. CSV flattens each row's top level; nested values
are written as JSON text, amounts stay integer cents.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
from datetime import datetime
from typing import Any

from table_controller.cli.records_ratings import RATINGS, configure_ratings, query_ratings, rows_of
from table_controller.recorder.csvcell import csv_text
from table_controller.recorder.errors import RecorderError
from table_controller.recorder.times import parse_time


def _time(value: str) -> datetime:
    try:
        return parse_time(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def configure(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--database", help='"postgresql://…" or "sqlite:///path"')
    where.add_argument("--config", help="a recorder's TOML config: use its database")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON")
    out.add_argument("--csv", action="store_true", help="CSV, one row per record")
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("tables", help="every table and when it was last seen")
    rounds = sub.add_parser("rounds", help="round records, newest first")
    rounds.add_argument("site")
    rounds.add_argument("table")
    rounds.add_argument("--last", type=int, help="the newest N (default 20 without --from/--to)")
    rounds.add_argument("--from", dest="start", type=_time, help="RFC 3339 time")
    rounds.add_argument("--to", dest="end", type=_time, help="RFC 3339 time")
    one = sub.add_parser("round", help="one round with its reconstruction")
    for name in ("site", "table", "epoch"):
        one.add_argument(name)
    one.add_argument("round_id", type=int)
    alerts = sub.add_parser("alerts", help="alerts with raise and resolve times")
    alerts.add_argument("--open", action="store_true", help="only open alerts")
    alerts.add_argument("--site")
    report = sub.add_parser("report", help="the shift report")
    report.add_argument("--site")
    report.add_argument("--from", dest="start", type=_time, help="RFC 3339 time")
    report.add_argument("--to", dest="end", type=_time, help="RFC 3339 time")
    sub.add_parser("gaps", help="pending and permanent feed gaps")
    migrate = sub.add_parser(
        "migrate",
        help="apply the schema as the database's administrator (who then owns it), "
        "and --grant a recorder's role what it needs",
    )
    migrate.add_argument("--grant", action="append", default=[], metavar="ROLE")
    configure_ratings(sub, _time)


async def _query(url: str, args: argparse.Namespace) -> Any:
    from table_controller.recorder import queries
    from table_controller.recorder.report import report
    from table_controller.recorder.store.backend import open_backend

    db = open_backend(url)
    try:
        if args.what == "tables":
            return await queries.tables(db)
        if args.what == "rounds":
            last = args.last if args.last or args.start or args.end else 20
            return await queries.rounds(
                db, args.site, args.table, last=last, start=args.start, end=args.end
            )
        if args.what == "round":
            return await queries.one_round(db, args.site, args.table, args.epoch, args.round_id)
        if args.what == "alerts":
            return await queries.alerts(db, open_only=args.open, site=args.site)
        if args.what == "report":
            return await report(db, site=args.site, start=args.start, end=args.end)
        if args.what in RATINGS:
            return await query_ratings(db, args)
        if args.what == "migrate":
            return await _migrate(db, args.grant)
        return await queries.gaps(db)
    finally:
        await db.close()


async def _migrate(db: Any, roles: list[str]) -> dict[str, Any]:
    from table_controller.recorder.store.backend import migrate
    from table_controller.recorder.store.roles import grant_recorder, owned_hand_records

    version = await migrate(db)
    for role in roles:
        await grant_recorder(db, role)
    return {"schema_version": version, "granted": roles, "owns": await owned_hand_records(db)}


def _rows(what: str, data: Any) -> list[dict[str, Any]]:
    if (rows := rows_of(what, data)) is not None:
        return rows
    if what == "report":
        return [*data["tables"], {"site": "TOTAL", "table": ""} | data["total"]]
    if what == "round":
        return [] if data is None else list(data["reconstruction"]["cards"])
    if what == "migrate":
        return [data]
    return list(data)


def _cell(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)


def _csv_cell(value: Any) -> str:
    text = _cell(value)
    return csv_text(text) if isinstance(value, str | dict | list) else text


def _write(rows: list[dict[str, Any]], as_csv: bool) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    if as_csv:
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows([[_csv_cell(r.get(c)) for c in columns] for r in rows])
        return
    shown = [c for c in columns if not any(isinstance(r.get(c), dict | list) for r in rows)]
    cells = [[_cell(r.get(c)) for c in shown] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(shown)]
    print("  ".join(c.ljust(w) for c, w in zip(shown, widths, strict=True)))
    for line in cells:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)))


def run(args: argparse.Namespace) -> int:
    try:
        url = args.database
        if url is None:
            from table_controller.recorder.config import load_config

            url = load_config(args.config, broker_files=False).database.url
        data = asyncio.run(_query(url, args))
    except RecorderError as exc:
        print(f"table-controller records: {exc}", file=sys.stderr)
        return 2
    if args.what == "round" and data is None:
        print("table-controller records: no such round", file=sys.stderr)
        return 1
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        print()
    else:
        _write(_rows(args.what, data), args.csv)
    if args.what == "verify" and not data["ok"]:
        print(
            f"table-controller records: {len(data['breaks'])} break(s) in the records' "
            "hash chain: a record was altered or dropped",
            file=sys.stderr,
        )
        return 1
    return 0
