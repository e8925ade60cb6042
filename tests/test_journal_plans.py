"""Issue 11: no statement's cost grows with the journal. SQLite says how it serves each of the
journal's statements (``EXPLAIN QUERY PLAN``): every one reaches its rows through an index or
the rowid, never a scan of a whole table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from table_controller.service.journal import Journal
from table_controller.service.outbox import statements

# A plan step that reads a whole table: "SCAN outbox" without an index.
_TABLE_SCAN = re.compile(r"^SCAN (\w+)$")
# Tables whose size does not grow with the journal: a few keys, one row per recorder, one
# counter per table.
_SMALL = {"meta", "acks", "sqlite_sequence"}


def _args(sql: str) -> tuple[object, ...]:
    return tuple(1 for _ in range(sql.count("?")))


@pytest.mark.parametrize("name", sorted(statements()))
def test_every_statement_is_served_by_an_index(tmp_path: Path, name: str) -> None:
    sql = statements()[name]
    with Journal(tmp_path / "j.sqlite3") as journal:
        db = journal._db
        # Statistics as a long journal would have them, so the planner chooses as it would then.
        db.execute("ANALYZE")
        plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", _args(sql))]
    scans = [step for step in plan if (m := _TABLE_SCAN.match(step)) and m.group(1) not in _SMALL]
    assert not scans, f"{name}: {sql}\n  plan: {plan}"


def test_the_check_sees_a_scan() -> None:
    assert _TABLE_SCAN.match("SCAN outbox")
    assert not _TABLE_SCAN.match("SCAN outbox USING INDEX outbox_unsent")
    assert not _TABLE_SCAN.match("SEARCH outbox USING INTEGER PRIMARY KEY (rowid>?)")
