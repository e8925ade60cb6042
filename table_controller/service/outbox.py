"""The outbox's messages and the SQL that serves them (``journal.py`` owns the file).

Every statement the journal runs is named here, so that a test can ask SQLite
how it serves each one (``EXPLAIN QUERY PLAN``): none may scan a table, since
its cost would then grow with the journal (a year on the floor is millions of
rows).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

SCHEMA_VERSION: Final = 2
_TOPIC_RE: Final = re.compile(r"^[^+#\x00]+\Z")

DDL: Final = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inputs (
    n           INTEGER PRIMARY KEY AUTOINCREMENT,
    recorded_at REAL NOT NULL,
    body        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    input_n  INTEGER PRIMARY KEY,
    made_at  REAL NOT NULL,
    version  INTEGER NOT NULL,
    body     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS acks (
    recorder TEXT PRIMARY KEY,
    feed_seq INTEGER NOT NULL,
    at       REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    topic         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    payload       BLOB NOT NULL,
    qos           INTEGER NOT NULL CHECK (qos IN (0, 1, 2)),
    retain        INTEGER NOT NULL CHECK (retain IN (0, 1)),
    input_n       INTEGER,
    enqueued_at   REAL NOT NULL,
    sent_at       REAL,
    refused_code  INTEGER,
    refused_count INTEGER NOT NULL DEFAULT 0,
    retry_at      REAL,
    feed_seq      INTEGER
);
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox(seq) WHERE sent_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_unsent_retained ON outbox(topic)
    WHERE sent_at IS NULL AND retain = 1;
CREATE INDEX IF NOT EXISTS outbox_sent_kind ON outbox(kind, seq) WHERE sent_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_kind ON outbox(kind, seq);
CREATE INDEX IF NOT EXISTS outbox_sent_retained ON outbox(topic, seq)
    WHERE retain = 1 AND sent_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_retry ON outbox(retry_at)
    WHERE sent_at IS NULL AND retry_at IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS outbox_feed ON outbox(feed_seq) WHERE feed_seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_feed_time ON outbox(enqueued_at) WHERE feed_seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS inputs_time ON inputs(recorded_at);
"""

# Version 1 files lack the feed counter; every other change is a new table or index.
MIGRATE_1: Final = "ALTER TABLE outbox ADD COLUMN feed_seq INTEGER"


class SQL:
    """Every statement the journal runs (``tests/test_journal_plans.py`` checks each plan)."""

    INSERT_INPUT: Final = "INSERT INTO inputs (recorded_at, body) VALUES (?, ?)"
    INPUTS_AFTER: Final = "SELECT n, body FROM inputs WHERE n > ? ORDER BY n LIMIT ?"
    INPUTS_BETWEEN: Final = "SELECT n, body FROM inputs WHERE n > ? AND n <= ? ORDER BY n LIMIT ?"
    # The last number given, kept by SQLite past a prune that removed every input.
    LAST_INPUT: Final = "SELECT seq FROM sqlite_sequence WHERE name = 'inputs'"
    FIRST_INPUT: Final = "SELECT MIN(n) FROM inputs"
    INPUT_BEFORE_TIME: Final = (
        "SELECT n FROM inputs WHERE recorded_at < ? ORDER BY recorded_at DESC LIMIT 1"
    )
    DELETE_INPUTS: Final = "DELETE FROM inputs WHERE n <= ?"

    INSERT_CHECKPOINT: Final = (
        "INSERT OR REPLACE INTO checkpoints (input_n, made_at, version, body) VALUES (?, ?, ?, ?)"
    )
    LATEST_CHECKPOINT: Final = (
        "SELECT input_n, version, body FROM checkpoints "
        "WHERE input_n = (SELECT MAX(input_n) FROM checkpoints)"
    )
    CHECKPOINT_AT_OR_BEFORE: Final = (
        "SELECT input_n FROM checkpoints WHERE input_n <= ? ORDER BY input_n DESC LIMIT 1"
    )
    CHECKPOINTS_FROM: Final = (
        "SELECT input_n, version, body FROM checkpoints WHERE input_n > ? ORDER BY input_n LIMIT 1"
    )
    DELETE_CHECKPOINTS: Final = "DELETE FROM checkpoints WHERE input_n < ?"

    DROP_UNSENT_RETAINED: Final = (
        "DELETE FROM outbox WHERE sent_at IS NULL AND retain = 1 AND topic = ?"
    )
    INSERT_MESSAGE: Final = (
        "INSERT INTO outbox (id, topic, kind, payload, qos, retain, input_n, enqueued_at, "
        "feed_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    # One statement a message: marks it and says whether it was a retained value.
    MARK_SENT: Final = (
        "UPDATE outbox SET sent_at = ?, retry_at = NULL WHERE id = ? AND sent_at IS NULL "
        "RETURNING topic, retain"
    )
    # Keep only the newest sent value of a retained topic.
    DROP_OLD_RETAINED: Final = (
        "DELETE FROM outbox WHERE retain = 1 AND topic = ? AND sent_at IS NOT NULL "
        "AND seq < (SELECT MAX(seq) FROM outbox "
        "           WHERE retain = 1 AND topic = ? AND sent_at IS NOT NULL)"
    )
    REFUSED_COUNT: Final = "SELECT refused_count FROM outbox WHERE id = ? AND sent_at IS NULL"
    MARK_REFUSED: Final = (
        "UPDATE outbox SET refused_code = ?, refused_count = ?, retry_at = ? WHERE id = ?"
    )
    PENDING: Final = (
        "SELECT id, topic, payload, qos, retain FROM outbox "
        "WHERE sent_at IS NULL AND (retry_at IS NULL OR retry_at <= ?) "
        "ORDER BY seq LIMIT ?"
    )
    NEXT_RETRY: Final = (
        "SELECT MIN(retry_at) FROM outbox WHERE sent_at IS NULL AND retry_at IS NOT NULL"
    )
    REFUSALS: Final = (
        "SELECT id, topic, payload, qos, retain, refused_code, refused_count, retry_at "
        "FROM outbox WHERE sent_at IS NULL AND refused_count > 0 ORDER BY seq"
    )
    DEPTH: Final = "SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL"
    OLDEST_UNSENT: Final = "SELECT MIN(enqueued_at) FROM outbox WHERE sent_at IS NULL"
    SENT_OF_KIND: Final = (
        "SELECT id, topic, payload, qos, retain FROM ("
        "  SELECT seq, id, topic, payload, qos, retain FROM outbox"
        "  WHERE kind = ? AND sent_at IS NOT NULL ORDER BY seq DESC LIMIT ?"
        ") ORDER BY seq"
    )
    LAST_OF_KIND: Final = (
        "SELECT id, topic, payload, qos, retain FROM ("
        "  SELECT seq, id, topic, payload, qos, retain FROM outbox"
        "  WHERE kind = ? ORDER BY seq DESC LIMIT ?"
        ") ORDER BY seq"
    )
    BY_ID: Final = "SELECT id, topic, payload, qos, retain FROM outbox WHERE id = ?"
    NTH_NEWEST_FEED_OF_KIND: Final = (
        "SELECT feed_seq FROM outbox WHERE kind = ? ORDER BY seq DESC LIMIT 1 OFFSET ?"
    )
    LAST_FEED_SEQ: Final = "SELECT MAX(feed_seq) FROM outbox WHERE feed_seq IS NOT NULL"
    FEED_BEFORE_TIME: Final = (
        "SELECT feed_seq FROM outbox WHERE feed_seq IS NOT NULL AND enqueued_at < ? "
        "ORDER BY enqueued_at DESC LIMIT 1"
    )
    FEED_RANGE: Final = (
        "SELECT feed_seq, id, topic, payload, qos, retain FROM outbox "
        "WHERE feed_seq IS NOT NULL AND feed_seq BETWEEN ? AND ? ORDER BY feed_seq"
    )
    PRUNE_FEED: Final = (
        "DELETE FROM outbox WHERE feed_seq IS NOT NULL AND feed_seq <= ? AND sent_at IS NOT NULL"
    )
    UPSERT_ACK: Final = (
        "INSERT INTO acks (recorder, feed_seq, at) VALUES (?, ?, ?) "
        "ON CONFLICT (recorder) DO UPDATE SET feed_seq = MAX(feed_seq, excluded.feed_seq), "
        "at = excluded.at"
    )
    MIN_ACK: Final = "SELECT MIN(feed_seq) FROM acks"
    META: Final = "SELECT key, value FROM meta"
    SET_META: Final = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"


def statements() -> dict[str, str]:
    """Every statement by name (for the plan test)."""
    return {k: v for k, v in vars(SQL).items() if k.isupper() and isinstance(v, str)}


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """One message waiting for (or done with) the broker.

    ``feed_seq`` is set on the non-retained messages (``events``, ``rounds``,
    ``alerts``): docs/feed.md, one counter per table and epoch across the three.
    """

    id: str  # the payload's own `id` (stable across resends)
    topic: str  # full topic
    payload: bytes  # JSON, UTF-8
    qos: int
    retain: bool
    feed_seq: int | None = None

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("outbox message: empty id")
        if not _TOPIC_RE.match(self.topic) or self.topic.startswith("/"):
            raise ValueError(f"outbox message {self.id}: bad topic {self.topic!r}")
        if self.qos not in (0, 1, 2):
            raise ValueError(f"outbox message {self.id}: qos {self.qos} not 0, 1 or 2")
        if not isinstance(self.payload, bytes):
            raise TypeError(f"outbox message {self.id}: payload must be bytes")

    @property
    def kind(self) -> str:
        """The last topic level: ``status``, ``events``, ``rounds``…"""
        return self.topic.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A message the broker refused, still in the outbox."""

    message: OutboxMessage
    reason_code: int
    count: int
    retry_at: datetime


def ts(when: datetime | None) -> float:
    if when is None:
        return datetime.now(UTC).timestamp()
    if when.tzinfo is None:
        raise ValueError("journal times must be timezone-aware (UTC)")
    return when.timestamp()


def dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def message(row: sqlite3.Row) -> OutboxMessage:
    return OutboxMessage(
        id=row["id"],
        topic=row["topic"],
        payload=bytes(row["payload"]),
        qos=row["qos"],
        retain=bool(row["retain"]),
    )
