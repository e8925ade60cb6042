"""A gap is given up because its table's epoch changed only once the new epoch has lasted: a
second controller configured as the same table announces its own epoch for a moment, then
yields (docs/feed.md), and the table still holds what the recorder is missing."""

from __future__ import annotations

import json

from bench.light_table import LightTable
from table_controller.recorder.book import SUPERSEDED_AFTER_S, FeedBook, Outgoing
from table_controller.recorder.intake import parse_message
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.quarantine import Storing
from table_controller.recorder.times import now_text
from tests.recorder.conftest import SITE, unique

LOST = 3


async def _commit(db: Backend, book: FeedBook, raw: list[tuple[str, bytes]]) -> None:
    """What the subscriber does with a batch, without the broker."""
    batch = await book.with_epochs(db, [parse_message(t, p) for t, p in raw])
    await Storing(batch).step(db, received=now_text())
    await book.absorb(db, batch)
    await book.save(db)


def _status(table: LightTable) -> tuple[str, bytes]:
    return (f"{table.prefix}/status", table.status())


def _asked(out: list[Outgoing]) -> list[tuple[int, int]]:
    bodies = [json.loads(o.payload) for o in out if o.topic.endswith("/replay")]
    return [(b["from_feed_seq"], b["to_feed_seq"]) for b in bodies]


async def _gap_states(db: Backend, epoch: str) -> list[str]:
    rows = await db.fetch("SELECT state FROM feed_gaps WHERE epoch = ?", [epoch])
    return [r[0] for r in rows]


async def _dealt_with_a_gap(db: Backend, book: FeedBook, name: str) -> LightTable:
    table = LightTable("127.0.0.1", 1, site=SITE, table=name, seed=1)
    table.deal_round()
    assert len(table.held) > LOST
    await _commit(
        db, book, [_status(table)] + [table.held[s] for s in sorted(table.held) if s != LOST]
    )
    assert await book.check(db, 0.0) == []
    assert _asked(await book.check(db, 2.1)) == [(LOST, LOST)]
    return table


async def test_an_epoch_announced_for_a_moment_leaves_the_gap_pending(db: Backend) -> None:
    book = FeedBook("rec-1")
    name = unique("flip")
    first = await _dealt_with_a_gap(db, book, name)
    # A second controller of the same table, with a journal of its own, then the first again.
    second = LightTable("127.0.0.1", 1, site=SITE, table=name, seed=2)
    await _commit(db, book, [_status(second)])
    for now in (2.5, 4.0, 60.0):
        await book.check(db, now)
    await book.save(db)
    assert await _gap_states(db, first.epoch) == ["pending"]
    await _commit(db, book, [_status(first)])
    assert _asked(await book.check(db, 120.0)) == [(LOST, LOST)]
    assert "permanent" not in await _gap_states(db, first.epoch)
    (ack,) = [json.loads(o.payload) for o in book.acks()]
    assert (ack["epoch"], ack["feed_seq"]) == (first.epoch, LOST - 1)
    await _commit(db, book, [first.held[LOST]])
    (ack,) = [json.loads(o.payload) for o in book.acks()]
    assert ack["feed_seq"] == max(first.held)


async def test_a_gap_of_an_epoch_replaced_for_good_becomes_permanent(db: Backend) -> None:
    book = FeedBook("rec-1")
    name = unique("flip")
    first = await _dealt_with_a_gap(db, book, name)
    second = LightTable("127.0.0.1", 1, site=SITE, table=name, seed=2)
    await _commit(db, book, [_status(second)])
    await book.check(db, 2.5)
    await book.save(db)
    assert await _gap_states(db, first.epoch) == ["pending"]
    await book.check(db, 2.5 + SUPERSEDED_AFTER_S + 3600.0)
    await book.save(db)
    assert await _gap_states(db, first.epoch) == ["permanent"]
