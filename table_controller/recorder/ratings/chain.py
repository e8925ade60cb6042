"""The round records' hash chain as the recorder keeps it (docs/feed.md, "Tamper-evident records").

On arrival, in the transaction that stores them, each new round record is
checked: its own ``hash``, and its link to the stored records just before and
after it in its epoch (``round_id`` ± 1; a record not arrived yet is checked
when it comes, and ``records verify`` checks every link again). A break is a
permanent finding (``chain_findings``, append-only like the records): it
stays visible in ``/api/findings``, on the report, the floor and the table
page, whatever arrives later.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from table_controller.feed.chain import Break, breaks, link_break, verifies
from table_controller.recorder.intake import FeedMessage
from table_controller.recorder.ratings.retention import anchors
from table_controller.recorder.store.backend import Backend, Tx

Json = dict[str, Any]
CHAIN_BREAK: Final = "CHAIN_BREAK"
_INSERT_FINDING: Final = (
    "INSERT INTO chain_findings (site, table_id, epoch, round_id, kind, detail, found)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_NEIGHBOUR: Final = (
    "SELECT record FROM rounds WHERE site = ? AND table_id = ? AND epoch = ? AND round_id = ?"
)


async def _neighbour(tx: Tx, m: FeedMessage, round_id: int) -> Json | None:
    rows = await tx.fetch(_NEIGHBOUR, (m.site, m.table, m.epoch, round_id))
    return None if not rows else dict(json.loads(rows[0][0]))


async def check_arrivals(tx: Tx, rounds: Sequence[FeedMessage], *, found: str) -> int:
    """Check the newly stored ``rounds`` in ``tx``; the number of breaks recorded."""
    rows = []
    for m in rounds:
        # The record as sent, not as shown: the table hashed its bytes, a NUL included.
        record, round_id = json.loads(m.payload), int(m.body["round_id"])
        before = await _neighbour(tx, m, round_id - 1)
        after = await _neighbour(tx, m, round_id + 1)
        found_breaks: list[Break] = []
        if before is not None:
            b = link_break(before, record)
        elif record.get("hash") is not None and not verifies(record):
            # The record before is not here (yet): its own hash still can be checked.
            b = Break(round_id, "hash", "the record's hash does not match its content")
        else:
            b = None
        if b is not None:
            found_breaks.append(b)
        if after is not None and (b2 := link_break(record, after)) is not None:
            found_breaks.append(b2)
        rows += [
            (m.site, m.table, m.epoch, b.round_id, b.kind, b.detail, found) for b in found_breaks
        ]
    await tx.executemany(_INSERT_FINDING, rows)
    return len(rows)


async def verify_all(db: Backend, *, found: str) -> Json:
    """Re-verify every stored chain (``records verify``); new breaks are recorded too."""
    rows = await db.fetch(
        "SELECT site, table_id, epoch, record FROM rounds ORDER BY site, table_id, epoch, round_id"
    )
    chains: dict[tuple[str, str, str], list[Json]] = {}
    for s, t, e, record in rows:
        chains.setdefault((s, t, e or ""), []).append(json.loads(record))
    cut = await anchors(db)
    result: list[Json] = []
    for (s, t, e), records in sorted(chains.items()):
        for b in breaks(records, cut.get((s, t, e))):
            result.append(
                {"site": s, "table": t, "epoch": e, "round_id": b.round_id}
                | {"kind": b.kind, "detail": b.detail}
            )
    async with db.transaction() as tx:
        await tx.executemany(
            _INSERT_FINDING,
            [
                (r["site"], r["table"], r["epoch"], r["round_id"], r["kind"], r["detail"], found)
                for r in result
            ],
        )
    sealed = sum(1 for records in chains.values() for r in records if r.get("hash"))
    return {
        "records": len(rows),
        "sealed": sealed,
        "chains": len(chains),
        "breaks": result,
        "ok": not result,
    }


async def findings(db: Backend, *, site: str | None = None) -> list[Json]:
    """Every break ever found, oldest first (``GET /api/findings``)."""
    sql = "SELECT site, table_id, epoch, round_id, kind, detail, found FROM chain_findings"
    params: list[Any] = []
    if site is not None:
        sql += " WHERE site = ?"
        params.append(site)
    return [
        {"site": s, "table": t, "epoch": e, "round_id": int(r), "kind": k}
        | {"detail": d, "found": f}
        for s, t, e, r, k, d, f in await db.fetch(sql + " ORDER BY found, site, table_id", params)
    ]
