"""Storing received messages: once by ``id``, in one transaction per batch.

Each batch is one transaction: the messages, the round and alert rows
derived from them, the newest ``status``/``state``/``stats`` per table and the
tables' last-seen times. The ``ack`` that follows is computed only from what
a committed transaction holds (``subscriber.py``). The feed's progress and
gaps are written after it: they are a summary that ``load_track`` rebuilds
from the messages themselves.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from table_controller.feed.payloads import rfc3339
from table_controller.recorder.intake import LATEST, MISPLACED, FeedMessage, Leaf
from table_controller.recorder.ratings.chain import check_arrivals
from table_controller.recorder.sequence import SeqTrack
from table_controller.recorder.storable import TEXT_PROBLEM
from table_controller.recorder.store.backend import Backend, Tx
from table_controller.recorder.times import parse_time

log = logging.getLogger(__name__)
Key = tuple[str, str, str]
_CHUNK: Final = 500

_INSERT_MESSAGE: Final = (
    "INSERT INTO messages (id, site, table_id, topic, schema, epoch, feed_seq, ts, received,"
    " payload, problem) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)
_INSERT_ROUND: Final = (
    "INSERT INTO rounds (id, site, table_id, epoch, round_id, started, ended, dealer, void, net,"
    " handle, ties, wars, surrenders, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO NOTHING"
)
_INSERT_ALERT: Final = (
    "INSERT INTO alerts (id, site, table_id, alert, code, severity, message, round_id, position,"
    " spot, resolved_by, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO NOTHING"
)
# A retained message may arrive after a newer one (a replayed session): keep the newest.
_UPSERT_LATEST: Final = (
    "INSERT INTO latest (site, table_id, topic, id, ts, payload) VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (site, table_id, topic) DO UPDATE SET id = excluded.id, ts = excluded.ts,"
    " payload = excluded.payload WHERE excluded.ts >= latest.ts"
)
_UPSERT_TABLE: Final = (
    "INSERT INTO tables (site, table_id, first_seen, last_seen) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (site, table_id) DO UPDATE SET last_seen = excluded.last_seen"
    " WHERE excluded.last_seen > tables.last_seen"
)
_UPSERT_PROGRESS: Final = (
    "INSERT INTO feed_progress (site, table_id, epoch, contiguous, announced, updated)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site, table_id, epoch) DO UPDATE SET"
    " contiguous = CASE WHEN excluded.contiguous > feed_progress.contiguous"
    " THEN excluded.contiguous ELSE feed_progress.contiguous END,"
    " announced = CASE WHEN excluded.announced > feed_progress.announced"
    " THEN excluded.announced ELSE feed_progress.announced END, updated = excluded.updated"
)


@dataclass(frozen=True, slots=True)
class RoundFigures:
    """What the shift report adds up, from one ``war-round/1`` record."""

    void: bool
    net: int | None
    handle: int | None
    ties: int
    wars: int
    surrenders: int


def round_figures(record: dict[str, Any]) -> RoundFigures:
    """Handle, ties, wars and surrenders of a round, counted as the table's ``stats`` do.

    Handle is every wager in action: a void wager (a tie wager without an
    initial wager, §(h)(3)(iii)) never was. Amounts are known only when the
    round's ``net`` is.
    """
    net = record.get("net")
    handle: int | None = None
    positions = record.get("positions", [])
    # A void round settled nothing, unless it was voided once its original deal was (every
    # position then has its outcome): what that deal settled stands (docs/rules.md).
    settled = not record.get("void") or any(p.get("outcome") is not None for p in positions)
    if isinstance(net, int) and settled:
        handle = sum(
            w.get("amount") or 0
            for p in positions
            for w in p.get("wagers", [])
            if w.get("result") != "void"
        )
    ties = wars = surrenders = 0
    for p in positions if settled else []:
        if p.get("outcome") == "tie":
            ties += 1
            wars += p.get("decision") == "war"
            surrenders += p.get("decision") == "surrender"
    return RoundFigures(
        void=bool(record.get("void")),
        net=net if isinstance(net, int) else None,
        handle=handle,
        ties=ties,
        wars=wars,
        surrenders=surrenders,
    )


@dataclass(frozen=True, slots=True)
class Committed:
    new: list[FeedMessage]  # events, rounds, alerts stored by this commit, in arrival order
    duplicates: int


async def store_batch(db: Backend, batch: Sequence[FeedMessage], *, received: str) -> Committed:
    """Store every message of ``batch`` not stored yet, in one transaction."""
    async with db.transaction() as tx:
        # Sequenced messages are kept one row each, once by id; of the retained
        # topics only the newest per table (docs/recorder.md).
        sequenced, seen = await _own_ids(tx, [m for m in batch if m.leaf not in LATEST])
        new: list[FeedMessage] = []
        for msg in sequenced:
            if msg.id not in seen:
                seen[msg.id] = _place(msg)
                new.append(msg)
        # Rows are written in key order: transactions of other recorders (or of this one's
        # other task) that touch the same rows then take their locks in the same order, and
        # cannot deadlock.
        by_id = sorted(new, key=_id)
        await tx.executemany(_INSERT_MESSAGE, [_message_row(m, received) for m in by_id])
        rounds = [m for m in new if _is_round(m)]
        await tx.executemany(_INSERT_ROUND, [_round_row(m) for m in sorted(rounds, key=_id)])
        # docs/feed.md: the hash chain is checked on arrival, in the transaction that stores it.
        await check_arrivals(tx, rounds, found=received)
        await tx.executemany(_INSERT_ALERT, [_alert_row(m) for m in by_id if _is_alert(m)])
        # Stable: of two messages of one table and topic, the later in the batch still wins.
        # A misplaced one (on one table's topic, naming another) is no table's latest: a
        # table's account could otherwise speak for another table.
        placed = [m for m in batch if not m.misplaced]
        # Only one the pages can read as its schema says: one table's status with a list
        # for its devices, say, would otherwise break the floor of every table.
        latest = sorted((m for m in placed if m.leaf in LATEST and m.readable), key=_latest_key)
        await tx.executemany(
            _UPSERT_LATEST,
            [(m.site, m.table, m.leaf.value, m.id, m.ts, _shown(m)) for m in latest],
        )
        tables = sorted({(m.site, m.table) for m in placed})
        await tx.executemany(_UPSERT_TABLE, [(s, t, received, received) for s, t in tables])
    return Committed(new=new, duplicates=len(sequenced) - len(new))


_Place = tuple[str, str, str | None, int | None]


def _place(m: FeedMessage) -> _Place:
    """Where a message's row puts it: its table, and its place in that table's feed (none
    for one published on another table's topic: it counts in no feed)."""
    if m.misplaced:
        return (m.site, m.table, None, None)
    return (m.site, m.table, m.epoch, m.feed_seq)


async def _existing(tx: Tx, ids: list[str]) -> dict[str, _Place]:
    found: dict[str, _Place] = {}
    unique = sorted(set(ids))
    for i in range(0, len(unique), _CHUNK):
        part = unique[i : i + _CHUNK]
        marks = ", ".join("?" * len(part))
        rows = await tx.fetch(
            "SELECT id, site, table_id, epoch, feed_seq, problem FROM messages"
            f" WHERE id IN ({marks})",
            part,
        )
        for id, site, table, epoch, feed_seq, problem in rows:
            if isinstance(problem, str) and problem.startswith(MISPLACED + " "):
                # Stored before misplaced rows were kept in no feed: in none all the same.
                epoch = feed_seq = None
            found[id] = (site, table, epoch, None if feed_seq is None else int(feed_seq))
    return found


async def _own_ids(tx: Tx, batch: list[FeedMessage]) -> tuple[list[FeedMessage], dict[str, _Place]]:
    """``batch`` with each message whose id another place holds (stored, or earlier in the
    batch) given an id of its own: ``<id>@<its topic's prefix>/<epoch>/<feed_seq>``; and
    the places the database holds for the ids the batch now has.

    Ids are the tables' (uuid5 of table, epoch and number): one table's account can send a
    message under an id another table's message will have. Held to the id alone, that
    message would be taken for a duplicate, and counted in its feed without being stored:
    acknowledged, and pruned by its table. Its place makes the id it is stored under its
    own; the same message sent again takes the same one."""
    stored = await _existing(tx, [m.id for m in batch])
    first = dict(stored)
    out: list[FeedMessage] = []
    renamed: list[str] = []
    for m in batch:
        place = _place(m)
        if first.setdefault(m.id, place) != place:
            own = f"{m.id}@{m.prefix}/{m.epoch}/{m.feed_seq}"
            log.warning("%s: id %s is another message's; stored as %s", m.prefix, m.id, own)
            m = replace(m, id=own)
            renamed.append(own)
        out.append(m)
    if renamed:  # rare: only then a second look, for the ids of their own
        stored |= await _existing(tx, renamed)
    return out, stored


def _message_row(m: FeedMessage, received: str) -> tuple[Any, ...]:
    site, table, epoch, feed_seq = _place(m)
    return (
        m.id,
        site,
        table,
        m.leaf.value,
        m.schema,
        epoch,
        feed_seq,
        m.ts,
        received,
        m.payload,
        m.problem,
    )


def _shown(m: FeedMessage) -> str:
    """A latest message's payload as read back: its text as shown (U+FFFD for what no
    database holds), since a latest is read, never verified against a hash."""
    return json.dumps(m.body) if m.problem and m.problem.startswith(TEXT_PROBLEM) else m.payload


def _id(m: FeedMessage) -> str:
    return m.id


def _latest_key(m: FeedMessage) -> tuple[str, str, str]:
    return (m.site, m.table, m.leaf.value)


def _is_round(m: FeedMessage) -> bool:
    return m.leaf is Leaf.ROUNDS and m.usable


def _is_alert(m: FeedMessage) -> bool:
    return m.leaf is Leaf.ALERTS and m.usable


def _round_row(m: FeedMessage) -> tuple[Any, ...]:
    b = m.body
    f = round_figures(b)
    return (
        m.id,
        m.site,
        m.table,
        m.epoch,
        b["round_id"],
        _ts(b.get("started")),
        _ts(b.get("ended")) or m.ts,
        b.get("dealer"),
        int(f.void),
        f.net,
        f.handle,
        f.ties,
        f.wars,
        f.surrenders,
        m.payload,
    )


def _alert_row(m: FeedMessage) -> tuple[Any, ...]:
    b = m.body
    return (
        m.id,
        m.site,
        m.table,
        b["alert"],
        b["code"],
        b["severity"],
        b.get("message"),
        b.get("round_id"),
        b.get("position"),
        b.get("spot"),
        b.get("resolved_by"),
        m.ts,
    )


def _ts(value: object) -> str | None:
    # Validated as RFC 3339 by the feed's model; normalised to the stored form.
    return rfc3339(parse_time(value)) if isinstance(value, str) else None


# -- the feed's progress ---------------------------------------------------------------


async def stored_status(db: Backend, site: str, table: str) -> dict[str, Any] | None:
    """The newest ``status`` of a table that the database holds, or None."""
    rows = await db.fetch(
        "SELECT payload FROM latest WHERE site = ? AND table_id = ? AND topic = 'status'",
        (site, table),
    )
    if not rows:
        return None
    body = json.loads(rows[0][0])
    return body if isinstance(body, dict) else None


async def load_track(db: Backend, key: Key, track: SeqTrack | None = None) -> SeqTrack:
    """The feed of ``key`` as the database holds it (what every recorder committed)."""
    site, table, epoch = key
    track = track if track is not None else SeqTrack()
    rows = await db.fetch(
        "SELECT contiguous, announced FROM feed_progress WHERE site = ? AND table_id = ?"
        " AND epoch = ?",
        (site, table, epoch),
    )
    if rows:
        track.contiguous = max(track.contiguous, int(rows[0][0]))
        track.announce(int(rows[0][1]))
    gaps = await db.fetch(
        "SELECT first_seq, last_seq FROM feed_gaps WHERE site = ? AND table_id = ? AND epoch = ?"
        " AND state = 'permanent' ORDER BY first_seq",
        (site, table, epoch),
    )
    track.permanent = sorted(set(track.permanent) | {(int(a), int(b)) for a, b in gaps})
    # Not a row from before misplaced ones were stored in no feed (their problem says so).
    seqs = await db.fetch(
        "SELECT feed_seq FROM messages WHERE site = ? AND table_id = ? AND epoch = ?"
        " AND feed_seq > ? AND (problem IS NULL OR problem NOT LIKE ?)",
        (site, table, epoch, track.contiguous, MISPLACED + " %"),
    )
    track.add(int(r[0]) for r in seqs)
    track.settle()
    return track


async def save_progress(db: Backend, rows: Iterable[tuple[Key, SeqTrack]], *, now: str) -> None:
    """Progress and pending gaps of the given feeds, in one transaction."""
    rows = sorted(rows, key=lambda row: row[0])  # key order: see store_batch
    if not rows:
        return
    async with db.transaction() as tx:
        await tx.executemany(
            _UPSERT_PROGRESS, [(*key, t.contiguous, t.announced, now) for key, t in rows]
        )
        # One statement each for all the feeds: a commit may touch hundreds of tables.
        await tx.executemany(
            "DELETE FROM feed_gaps WHERE site = ? AND table_id = ? AND epoch = ?"
            " AND state = 'pending'",
            [key for key, _ in rows],
        )
        await tx.executemany(
            "INSERT INTO feed_gaps (site, table_id, epoch, first_seq, last_seq, state, since)"
            " VALUES (?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT DO NOTHING",
            [(*key, a, b, now) for key, track in rows for a, b in track.holes()],
        )


async def save_permanent(
    db: Backend, key: Key, ranges: Iterable[tuple[int, int]], *, now: str
) -> None:
    async with db.transaction() as tx:
        await tx.executemany(
            "INSERT INTO feed_gaps (site, table_id, epoch, first_seq, last_seq, state, since)"
            " VALUES (?, ?, ?, ?, ?, 'permanent', ?) ON CONFLICT DO NOTHING",
            [(*key, a, b, now) for a, b in ranges],
        )
