"""Exports for auditors (``docs/recorder.md``): the round records as stored, in JSON or CSV.

JSON is every ``war-round/1`` record as it arrived, ``prev_hash`` and ``hash``
included, so that an auditor re-verifies the chain with any RFC 8785 library.
CSV is one row per wager (a round without a wager, a void one, is one row),
with the round's identity, its ``hash`` and whether it verifies.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from table_controller.feed.chain import verifies
from table_controller.recorder.queries import window
from table_controller.recorder.storable import storable
from table_controller.recorder.store.backend import Backend

Json = dict[str, Any]


async def export(
    db: Backend,
    *,
    site: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[Json]:
    """Every round record ended in [start, end), per table and epoch in round order."""
    where, params = window("ended", site, start, end)
    rows = await db.fetch(
        "SELECT record FROM rounds" + where + " ORDER BY site, table_id, epoch, round_id", params
    )
    return [json.loads(r[0]) for r in rows]


def csv_rows(records: list[Json]) -> list[Json]:
    """One flat row per wager of ``records``."""
    out: list[Json] = []
    for r in records:
        head = {
            "site": r.get("site"),
            "table": r.get("table"),
            "epoch": r.get("epoch"),
            "round_id": r.get("round_id"),
            "started": r.get("started"),
            "ended": r.get("ended"),
            "dealer": r.get("dealer"),
            "rules": r.get("rules"),
            "void": r.get("void"),
            "dealer_card": r.get("dealer_card"),
            "dealer_war_card": r.get("dealer_war_card"),
            "round_net": r.get("net"),
            "prev_hash": r.get("prev_hash"),
            "hash": r.get("hash"),
            "verifies": verifies(r) if r.get("hash") else None,
        }
        wagers = [
            {
                "position": p.get("position"),
                "card": p.get("card"),
                "outcome": p.get("outcome"),
                "decision": p.get("decision"),
                "war_card": p.get("war_card"),
                "spot": w.get("spot"),
                "amount": w.get("amount"),
                "result": w.get("result"),
                "net": w.get("net"),
            }
            for p in r.get("positions", [])
            for w in p.get("wagers", [])
        ]
        # Shown, as the API shows it: the hash was checked on the record as sent.
        out += [storable(head | w) for w in wagers] or [storable(head)]
    return out
