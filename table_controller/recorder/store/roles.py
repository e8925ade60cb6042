"""Who may change the hand records in PostgreSQL (docs/recorder.md, "Records that cannot be
altered").

The recorder's role has no UPDATE, DELETE or TRUNCATE on the hand records. That holds only
if it does not own them: an owner may grant itself any privilege back. So in production
the database's administrator owns the schema: ``table-controller records migrate --grant
ROLE`` applies the migrations as the administrator and grants the recorder's role what it
needs, SELECT and INSERT on the hand records and full use of the recorder's working tables
(its progress, gaps and latest values). A recorder whose role owns the hand records still
runs, and says at every start that its records are not protected from itself.
"""

from __future__ import annotations

import re
from typing import Final

from table_controller.recorder.errors import RecorderConfigError
from table_controller.recorder.store.backend import Backend, is_postgres
from table_controller.recorder.store.schema import HAND_RECORDS, WORKING_TABLES

ROLE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


def _role(name: str) -> str:
    if not ROLE.match(name):
        raise RecorderConfigError(f"--grant: {name!r} is not a plain PostgreSQL role name")
    return name


async def grant_recorder(db: Backend, role: str) -> None:
    """Give ``role`` (a recorder's) what it needs and nothing more; PostgreSQL only."""
    if not is_postgres(db):
        raise RecorderConfigError("--grant: SQLite has no roles (its triggers guard the records)")
    name = _role(role)
    async with db.transaction(exclusive=True) as tx:
        await tx.execute(f"GRANT SELECT, INSERT ON {', '.join(HAND_RECORDS)} TO {name}")
        await tx.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(WORKING_TABLES)} TO {name}"
        )
        await tx.execute(f"GRANT SELECT ON schema_version TO {name}")


async def owned_hand_records(db: Backend) -> list[str]:
    """The hand-record tables the connected role owns (PostgreSQL; none in SQLite)."""
    if not is_postgres(db):
        return []
    marks = ", ".join("?" for _ in HAND_RECORDS)
    rows = await db.fetch(
        "SELECT tablename FROM pg_tables WHERE tableowner = current_user "
        f"AND schemaname = current_schema() AND tablename IN ({marks}) ORDER BY tablename",
        HAND_RECORDS,
    )
    return [str(r[0]) for r in rows]
