"""A table's feed counts only what is stored in it: never a message published on another
table's topic in its name, nor one taken for a duplicate because another table's message
holds its id. Either would be acknowledged, and pruned by the table, unstored."""

from __future__ import annotations

import json

from table_controller.recorder.book import FeedBook
from table_controller.recorder.intake import parse_message
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import store_batch

SITE = "main-floor"


def _event(table: str, epoch: str, seq: int, id: str, kind: str = "reshuffle_due") -> bytes:
    body: dict[str, object] = {"schema": "table-event/1", "id": id, "table": table}
    body |= {"site": SITE}
    body |= {"ts": "2026-01-01T00:00:00.000Z", "seq": seq, "epoch": epoch, "round_id": 1}
    return json.dumps(body | {"type": kind, "feed_seq": seq}).encode()


def _on(table: str) -> str:
    return f"casino/{SITE}/table/{table}/events"


def _acked(book: FeedBook, table: str) -> list[int]:
    acks = [json.loads(a.payload) for a in book.acks()]
    return [a["feed_seq"] for a in acks if a["table"] == table]


async def test_a_message_naming_another_table_fills_no_gap_of_it(db: Backend) -> None:
    """B's feed_seq 2 was lost; table A's account sends, on A's topic, a payload naming B
    with that feed_seq. Neither this recorder (reloading B's feed while its hole is open)
    nor one started later takes it for B's."""
    book = FeedBook("rec-1")
    b1 = parse_message(_on("t-b"), _event("t-b", "ep-b", 1, "b-1"))
    b3 = parse_message(_on("t-b"), _event("t-b", "ep-b", 3, "b-3"))
    forged = parse_message(_on("t-a"), _event("t-b", "ep-b", 2, "forged-2"))
    assert forged.misplaced
    batch = [b1, forged, b3]
    await store_batch(db, batch, received="2026-01-01T00:00:01.000Z")
    await book.absorb(db, batch)
    acked = _acked(book, "t-b")
    await book.check(db, 100.0)  # the hole still open: the feed reloaded from the database
    await book.check(db, 101.0)
    acked += _acked(book, "t-b")
    assert acked
    assert max(acked) == 1
    later = await FeedBook("rec-2").track(db, (SITE, "t-b", "ep-b"))
    assert later.contiguous == 1
    rows = await db.fetch("SELECT epoch, feed_seq FROM messages WHERE id = 'forged-2'", [])
    assert [tuple(r) for r in rows] == [(None, None)]  # kept, in no feed


async def test_a_message_whose_id_another_tables_message_holds_is_stored_as_its_own(
    db: Backend,
) -> None:
    """Table A, in its own name, sends a message under the id B's feed_seq 1 will have
    (ids are uuid5 of table, epoch and number). B's message is still stored, under an id
    of its own, before any ack covers it, and only once however often it comes."""
    book = FeedBook("rec-1")
    squat = parse_message(_on("t-a"), _event("t-a", "ep-a", 1, "B-1"))
    batch = await book.with_epochs(db, [squat])
    await store_batch(db, batch, received="2026-01-01T00:00:01.000Z")
    await book.absorb(db, batch)
    genuine = parse_message(_on("t-b"), _event("t-b", "ep-b", 1, "B-1", "dealer_changed"))
    for again in range(2):
        batch = await book.with_epochs(db, [genuine])
        done = await store_batch(db, batch, received="2026-01-01T00:00:02.000Z")
        await book.absorb(db, batch)
        assert (len(done.new), done.duplicates) == ((1, 0) if again == 0 else (0, 1))
    rows = await db.fetch(
        "SELECT id, epoch, feed_seq FROM messages WHERE site = ? AND table_id = 't-b'", [SITE]
    )
    assert [tuple(r) for r in rows] == [(f"B-1@casino/{SITE}/table/t-b/ep-b/1", "ep-b", 1)]
    assert _acked(book, "t-b") == [1]
    held = await db.fetch("SELECT table_id FROM messages WHERE id = 'B-1'", [])
    assert [r[0] for r in held] == ["t-a"]


async def test_a_misplaced_row_stored_in_a_feed_before_is_no_duplicate_of_its_tables(
    db: Backend,
) -> None:
    """A database from before misplaced messages were stored in no feed holds one with the
    named table's epoch and feed_seq: the named table's own message under that id is still
    stored, as its own, not taken for a duplicate of it."""
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO messages (id, site, table_id, topic, schema, epoch, feed_seq, ts,"
            " received, payload, problem) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                *("B-1", SITE, "t-b", "events", "table-event/1", "ep-b", 1),
                *("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.100Z", "{}"),
                f"published on {_on('t-a')} by table 't-b'",
            ],
        )
    book = FeedBook("rec-1")
    genuine = parse_message(_on("t-b"), _event("t-b", "ep-b", 1, "B-1", "dealer_changed"))
    batch = await book.with_epochs(db, [genuine])
    done = await store_batch(db, batch, received="2026-01-01T00:00:02.000Z")
    await book.absorb(db, batch)
    assert [m.id for m in done.new] == [f"B-1@casino/{SITE}/table/t-b/ep-b/1"]
    assert _acked(book, "t-b") == [1]
