"""A message the database refuses for a reason of its own is quarantined, not fatal.

The refusals here are the database's own, on a real PostgreSQL: triggers of the kind a
site's administrator might add, which no check of the recorder's intake can foresee.
The rest of the feed is stored and acknowledged as ever, and the refused message is
kept with a ``problem`` naming the refusal. A database that takes no message at all
still stops the recorder, with nothing acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bench.light_table import LightTable
from table_controller.recorder.intake import LATEST, Leaf
from table_controller.recorder.store.backend import Backend, open_backend
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


@contextlib.asynccontextmanager
async def _locked(db: Backend) -> AsyncIterator[None]:
    """No message stored until the end of the block (reads go on)."""
    async with db.transaction() as tx:
        await tx.execute("LOCK TABLE messages IN EXCLUSIVE MODE")
        yield


async def _deal_until_acked(
    recorder: Recorder,
    tables: list[LightTable],
    held: contextlib.AbstractAsyncContextManager[None] | None = None,
) -> None:
    """Every round dealt (within ``held``) and acknowledged; fails at once if the recorder
    stops instead."""
    running: asyncio.Future[Any] = asyncio.create_task(recorder.run(), name="test-recorder")
    try:
        async with dealing(*tables):
            async with held or contextlib.nullcontext():
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


async def test_the_database_away_while_a_batch_is_stored_one_by_one_loses_no_live_change(
    mosquitto: MosquittoBroker, pg_url: str, pg_db: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """The messages of a refused batch that were stored before the database went away
    still reach the live feed once it is back: a retry finds them stored already."""
    await _refuse(pg_db, "rounds", f"NEW.round_id = {REFUSED_ROUND}", "no round 3 here")
    # The connection is cut once, as the refused round record is kept quarantined: the
    # messages before it in its batch are stored by then, one by one.
    async with pg_db.transaction() as tx:
        await tx.execute("CREATE SEQUENCE away_once")
        await tx.execute(
            "CREATE FUNCTION away_once() RETURNS trigger LANGUAGE plpgsql AS $$"
            " BEGIN IF NEW.problem IS NOT NULL AND nextval('away_once') = 1 THEN"
            " PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$"
        )
        await tx.execute(
            "CREATE TRIGGER away_once BEFORE INSERT ON messages"
            " FOR EACH ROW EXECUTE FUNCTION away_once()"
        )
    tables = _tables(mosquitto)
    recorder = Recorder(recorder_config(mosquitto, pg_url).mqtt, pg_db)
    changes = recorder.live.listen()
    # Every round is dealt while the messages table is locked, so that the refused round
    # record comes in one batch with the messages dealt before it.
    locker = open_backend(pg_url)
    try:
        await _deal_until_acked(recorder, tables, held=_locked(locker))
    finally:
        await locker.close()
    # The log says why the database was away, in the server's words.
    assert any(
        r.levelname == "WARNING"
        and "terminating connection due to administrator command" in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]
    # Cut once, then each table's round record quarantined.
    assert await pg_db.fetch("SELECT last_value FROM away_once") == [(1 + len(tables),)]
    names = [t.table for t in tables]
    stored = await pg_db.fetch(
        f"SELECT table_id, id FROM messages WHERE table_id IN ({', '.join('?' * len(names))})",
        names,
    )
    live = []
    while not changes.empty():
        change = changes.get_nowait()
        if Leaf(change["topic"]) not in LATEST:
            live.append((change["table"], change["id"]))
    assert len(live) == len(set(live))
    assert sorted(live) == sorted(stored)
