"""A message the database refuses for a reason of its own is quarantined, not fatal.

The refusals here are the database's own, on a real PostgreSQL: triggers of the kind a
site's administrator might add, which no check of the recorder's intake can foresee.
The rest of the feed is stored and acknowledged as ever, and the refused message is
kept with a ``problem`` naming the refusal. A database that takes no message at all
still stops the recorder, with nothing acknowledged.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bench.light_table import LightTable
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.quarantine import QUARANTINED
from table_controller.recorder.subscriber import Recorder
from table_controller.rigs.broker import MosquittoBroker
from tests.recorder.checks import assert_complete
from tests.recorder.conftest import SITE, dealing, recorder_config, unique

ROUNDS = 6
REFUSED_ROUND = 3  # its row in ``rounds`` is refused
REFUSED_MESSAGE = 4  # its row in ``messages`` is refused, unless its payload is wrapped
SETTLE_TIMEOUT_S = 60.0


async def _refuse(db: Backend, table: str, condition: str, text: str) -> None:
    async with db.transaction() as tx:
        await tx.execute(
            f"CREATE FUNCTION refuse_{table}() RETURNS trigger LANGUAGE plpgsql AS $$"
            f" BEGIN IF {condition} THEN RAISE EXCEPTION '{text}'; END IF; RETURN NEW; END $$"
        )
        await tx.execute(
            f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table}"
            f" FOR EACH ROW EXECUTE FUNCTION refuse_{table}()"
        )


def _tables(broker: MosquittoBroker) -> list[LightTable]:
    run = unique("q")
    return [
        LightTable(broker.host, broker.port, site=SITE, table=f"t{i}-{run}", seed=i)
        for i in range(2)
    ]


async def _deal_until_acked(recorder: Recorder, tables: list[LightTable]) -> None:
    """Every round dealt and acknowledged; fails at once if the recorder stops instead."""
    running: asyncio.Future[Any] = asyncio.create_task(recorder.run(), name="test-recorder")
    try:
        async with dealing(*tables):
            for _ in range(ROUNDS):
                for t in tables:
                    t.deal_round()
                await asyncio.gather(*(t.wait_sent(SETTLE_TIMEOUT_S) for t in tables))
            acked: asyncio.Future[Any] = asyncio.ensure_future(
                asyncio.gather(*(t.wait_acked(SETTLE_TIMEOUT_S) for t in tables))
            )
            await asyncio.wait({acked, running}, return_when=asyncio.FIRST_COMPLETED)
            if not acked.done():
                acked.cancel()
            assert not running.done(), f"the recorder stopped: {running.exception()!r}"
            await acked
    finally:
        recorder.stop()
        await asyncio.wait_for(running, 30)


async def test_a_refused_message_is_quarantined_and_the_feed_goes_on(
    mosquitto: MosquittoBroker, pg_url: str, pg_db: Backend
) -> None:
    await _refuse(pg_db, "rounds", f"NEW.round_id = {REFUSED_ROUND}", "no round 3 here")
    await _refuse(
        pg_db,
        "messages",
        f"NEW.topic = 'rounds' AND NEW.payload LIKE '%\"round_id\": {REFUSED_MESSAGE},%'",
        "no such payload here",
    )
    tables = _tables(mosquitto)
    await _deal_until_acked(Recorder(recorder_config(mosquitto, pg_url).mqtt, pg_db), tables)
    # Every message stored once, every table acknowledged to its last feed_seq.
    await assert_complete(pg_db, *tables)
    names = [t.table for t in tables]
    marks = ", ".join("?" * len(names))
    kept = await pg_db.fetch(
        f"SELECT table_id, round_id FROM rounds WHERE table_id IN ({marks})", names
    )
    assert sorted(kept) == sorted(
        (t, r)
        for t in names
        for r in range(1, ROUNDS + 1)
        if r not in (REFUSED_ROUND, REFUSED_MESSAGE)
    )
    problems = await pg_db.fetch(
        f"SELECT table_id, payload, problem FROM messages WHERE table_id IN ({marks})"
        " AND problem IS NOT NULL",
        names,
    )
    as_sent = {t: json.loads(p) for t, p, why in problems if "no round 3 here" in why}
    assert {t: b["round_id"] for t, b in as_sent.items()} == dict.fromkeys(names, REFUSED_ROUND)
    wrapped = {t: json.loads(p) for t, p, why in problems if "no such payload here" in why}
    assert {t: json.loads(b["quarantined"])["round_id"] for t, b in wrapped.items()} == (
        dict.fromkeys(names, REFUSED_MESSAGE)
    )
    assert len(problems) == 2 * len(names)
    assert all(why.startswith(QUARANTINED) for _, _, why in problems)


async def test_a_database_that_takes_no_message_stops_the_recorder(
    mosquitto: MosquittoBroker, pg_url: str, pg_db: Backend
) -> None:
    await _refuse(pg_db, "messages", "TRUE", "nothing is stored here")
    (table,) = _tables(mosquitto)[:1]
    recorder = Recorder(recorder_config(mosquitto, pg_url).mqtt, pg_db)
    async with dealing(table):
        table.deal_round()
        await table.wait_sent(SETTLE_TIMEOUT_S)
        with pytest.raises(ExceptionGroup) as raised:
            await asyncio.wait_for(recorder.run(), SETTLE_TIMEOUT_S)
    assert "nothing is stored here" in str(raised.value.exceptions)
    assert table.acked == 0
    assert await pg_db.fetch("SELECT COUNT(*) FROM messages") == [(0,)]
