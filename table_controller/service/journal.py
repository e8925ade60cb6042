"""The durable journal and outbox: one SQLite file per table.

Everything the table knows is rebuilt from the journal after a restart
(``../shared/spec/GAME.md``, last paragraph): every device input is appended
here, and the messages it produced are enqueued in the *same* transaction,
before the service acts on the input or publishes anything. Nothing is lost
when the broker is away or the controller dies (``MQTT.md``): messages wait in
the outbox and go out, in order, when the broker is back.

Outbox rules
------------

* **Order.** Messages are published in the order they were enqueued (the
  ``seq`` column). Non-retained messages are never dropped, merged or reordered
  by the outbox.
* **Retained topics coalesce.** For a retained topic (``status``, ``state``,
  ``stats``) only the latest value matters to a subscriber. Enqueueing a
  retained message deletes every *unsent* retained message for the same topic,
  and the new one takes its own, newer place at the end of the queue. So a
  retained value is never published ahead of the events that led to it, and a
  backlog after an outage holds at most one value per retained topic. Once
  sent, older sent values of the topic are pruned too (only the last one is
  kept).
* **Refusals.** A message the broker refused (PUBACK reason code >= 0x80) stays
  in the outbox with its reason code and a refusal count, and is held back for
  a while: ``refused_retry_base_s`` after the first refusal, doubling with
  every further refusal up to ``refused_retry_max_s``. While it waits,
  :meth:`Journal.pending` skips it, so the messages behind it keep flowing; when
  its time comes it is offered again in its original place. A refused message
  that is finally accepted therefore arrives later than the messages enqueued
  after it: that is the price of not blocking the table's feed behind a message
  the broker will not take (the alert raised for the refusal and the events'
  ``seq`` tell a subscriber).
* **At least once.** A message is marked sent only after the broker
  acknowledged it. A crash between the acknowledgement and
  :meth:`Journal.mark_sent` sends it again, with the same ``id``.

The journal is used from one thread (the service's event loop). Another
process may read it at the same time (``readonly=True``), for example the
``history`` command.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final

SCHEMA_VERSION: Final = 1
# Refused messages wait this long before they are offered again, doubling per refusal.
REFUSED_RETRY_BASE_S: Final = 5.0
REFUSED_RETRY_MAX_S: Final = 300.0
# Replay reads inputs in chunks so that a long journal never sits in memory at once.
_REPLAY_CHUNK: Final = 256
_BUSY_TIMEOUT_MS: Final = 5000
_TOPIC_RE: Final = re.compile(r"^[^+#\x00]+$")

_DDL: Final = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inputs (
    n           INTEGER PRIMARY KEY AUTOINCREMENT,
    recorded_at REAL NOT NULL,
    body        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    topic         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    payload       BLOB NOT NULL,
    qos           INTEGER NOT NULL CHECK (qos IN (0, 1, 2)),
    retain        INTEGER NOT NULL CHECK (retain IN (0, 1)),
    input_n       INTEGER REFERENCES inputs(n),
    enqueued_at   REAL NOT NULL,
    sent_at       REAL,
    refused_code  INTEGER,
    refused_count INTEGER NOT NULL DEFAULT 0,
    retry_at      REAL
);
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox(seq) WHERE sent_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_unsent_retained ON outbox(topic)
    WHERE sent_at IS NULL AND retain = 1;
CREATE INDEX IF NOT EXISTS outbox_sent_kind ON outbox(kind, seq) WHERE sent_at IS NOT NULL;
"""


class JournalError(RuntimeError):
    """The journal file cannot be used; the message names the file and what to do."""


class DuplicateMessageId(ValueError):
    """A message was enqueued with an ``id`` already in the outbox (a producer bug)."""


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """One message waiting for (or done with) the broker."""

    id: str  # the payload's own `id` (stable across resends)
    topic: str  # full topic
    payload: bytes  # JSON, UTF-8
    qos: int
    retain: bool

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


def _ts(when: datetime | None) -> float:
    if when is None:
        return datetime.now(UTC).timestamp()
    if when.tzinfo is None:
        raise ValueError("journal times must be timezone-aware (UTC)")
    return when.timestamp()


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def _message(row: sqlite3.Row) -> OutboxMessage:
    return OutboxMessage(
        id=row["id"],
        topic=row["topic"],
        payload=bytes(row["payload"]),
        qos=row["qos"],
        retain=bool(row["retain"]),
    )


class Journal:
    """Inputs for replay and the outbox for the publisher, in one SQLite file.

    The file uses WAL with ``synchronous=FULL``: a call that returned has
    reached the disk, so a power cut loses nothing that the table acted on.
    """

    epoch: str

    def __init__(
        self,
        path: str | Path,
        *,
        readonly: bool = False,
        refused_retry_base_s: float = REFUSED_RETRY_BASE_S,
        refused_retry_max_s: float = REFUSED_RETRY_MAX_S,
    ) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if refused_retry_base_s <= 0 or refused_retry_max_s < refused_retry_base_s:
            raise ValueError("refused retry: need 0 < base <= max")
        self._retry_base_s = refused_retry_base_s
        self._retry_max_s = refused_retry_max_s
        self._db = self._open()
        try:
            self.epoch, self.created = self._identity()
        except BaseException:
            self._db.close()
            raise

    # -- opening ----------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self.readonly:
            if not self.path.is_file():
                raise JournalError(f"{self.path}: no journal there")
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            db = sqlite3.connect(uri, uri=True, isolation_level=None)
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise JournalError(
                    f"{self.path}: cannot create its directory: {exc.strerror}"
                ) from exc
            try:
                db = sqlite3.connect(self.path, isolation_level=None)
            except sqlite3.Error as exc:
                raise JournalError(f"{self.path}: cannot open: {exc}") from exc
        db.row_factory = sqlite3.Row
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            self._check_kind(db)
            if not self.readonly:
                mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise JournalError(f"{self.path}: cannot switch to WAL (got {mode})")
                # FULL: every commit is synced to disk before record() returns.
                db.execute("PRAGMA synchronous = FULL")
                db.execute("PRAGMA foreign_keys = ON")
                self._create(db)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise JournalError(f"{self.path}: not a usable journal: {exc}") from exc
        except BaseException:
            db.close()
            raise
        return db

    def _check_kind(self, db: sqlite3.Connection) -> None:
        """Refuse a newer journal, or another program's database, before writing to it."""
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise JournalError(
                f"{self.path}: written by a newer version (schema {version}); "
                "upgrade the table controller"
            )
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "meta" not in tables:
            raise JournalError(f"{self.path}: another program's database, not a journal")

    def _create(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _DDL.split(";"):
                if statement.strip():
                    db.execute(statement)
            have = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
            if have is None:
                # A new file is a new journal: a new epoch, so that subscribers
                # see that event `seq` numbers start again (MQTT.md).
                now = datetime.now(UTC)
                db.execute("INSERT INTO meta VALUES ('epoch', ?)", (str(uuid.uuid4()),))
                db.execute("INSERT INTO meta VALUES ('created', ?)", (now.isoformat(),))
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _identity(self) -> tuple[str, datetime]:
        try:
            rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path}: not a journal: {exc}") from exc
        if "epoch" not in rows:
            raise JournalError(f"{self.path}: not a journal (no epoch)")
        return rows["epoch"], datetime.fromisoformat(rows["created"])

    def _writable(self) -> sqlite3.Connection:
        if self.readonly:
            raise JournalError(f"{self.path}: opened read-only")
        return self._db

    # -- inputs -------------------------------------------------------------------

    def record(
        self,
        input_json: Mapping[str, Any],
        messages: Sequence[OutboxMessage],
        *,
        now: datetime | None = None,
    ) -> int:
        """Append one input and enqueue its messages in one transaction.

        Returns the input's journal number (1, 2, …). Nothing is written when
        the input is not JSON or a message id is already in the outbox.
        """
        db = self._writable()
        body = json.dumps(
            dict(input_json), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        at = _ts(now)
        db.execute("BEGIN IMMEDIATE")
        try:
            cur = db.execute("INSERT INTO inputs (recorded_at, body) VALUES (?, ?)", (at, body))
            n = cur.lastrowid
            assert n is not None
            self._insert(db, messages, at, n)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return n

    def inputs(self, *, after: int = 0) -> Iterator[dict[str, Any]]:
        """Every journaled input in order (optionally only those after number ``after``)."""
        for _, body in self.numbered_inputs(after=after):
            yield body

    def numbered_inputs(self, *, after: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every journaled input with its journal number, in order."""
        last = after
        while True:
            rows = self._db.execute(
                "SELECT n, body FROM inputs WHERE n > ? ORDER BY n LIMIT ?",
                (last, _REPLAY_CHUNK),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                last = row["n"]
                yield last, json.loads(row["body"])

    def last_input_number(self) -> int:
        """The journal number of the last input, 0 when there is none."""
        row = self._db.execute("SELECT MAX(n) FROM inputs").fetchone()
        return int(row[0] or 0)

    # -- outbox: writing ---------------------------------------------------------

    def enqueue(self, messages: Sequence[OutboxMessage], *, now: datetime | None = None) -> None:
        """Enqueue messages not tied to an input (the status on connect, say)."""
        if not messages:
            return
        db = self._writable()
        at = _ts(now)
        db.execute("BEGIN IMMEDIATE")
        try:
            self._insert(db, messages, at, None)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _insert(
        self,
        db: sqlite3.Connection,
        messages: Sequence[OutboxMessage],
        at: float,
        input_n: int | None,
    ) -> None:
        for msg in messages:
            if msg.retain:
                # Only the latest retained value matters: the older unsent one
                # goes, and the new one queues behind everything already waiting.
                db.execute(
                    "DELETE FROM outbox WHERE sent_at IS NULL AND retain = 1 AND topic = ?",
                    (msg.topic,),
                )
            try:
                db.execute(
                    "INSERT INTO outbox (id, topic, kind, payload, qos, retain, input_n, "
                    "enqueued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        msg.id,
                        msg.topic,
                        msg.kind,
                        msg.payload,
                        msg.qos,
                        int(msg.retain),
                        input_n,
                        at,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise DuplicateMessageId(
                    f"message id {msg.id!r} is already in the outbox; give every message a new id"
                ) from exc

    def mark_sent(self, ids: Sequence[str], *, now: datetime | None = None) -> None:
        """The broker acknowledged these messages. Unknown or already sent ids are ignored."""
        if not ids:
            return
        db = self._writable()
        at = _ts(now)
        db.execute("BEGIN IMMEDIATE")
        try:
            retained_topics: set[str] = set()
            for id_ in ids:
                row = db.execute(
                    "SELECT topic, retain FROM outbox WHERE id = ? AND sent_at IS NULL", (id_,)
                ).fetchone()
                if row is None:
                    continue
                db.execute("UPDATE outbox SET sent_at = ?, retry_at = NULL WHERE id = ?", (at, id_))
                if row["retain"]:
                    retained_topics.add(row["topic"])
            for topic in retained_topics:
                # Keep only the newest sent value of a retained topic.
                db.execute(
                    "DELETE FROM outbox WHERE retain = 1 AND topic = ? AND sent_at IS NOT NULL "
                    "AND seq < (SELECT MAX(seq) FROM outbox "
                    "           WHERE retain = 1 AND topic = ? AND sent_at IS NOT NULL)",
                    (topic, topic),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def mark_refused(self, id: str, reason_code: int, *, now: datetime | None = None) -> bool:
        """The broker refused this message: it stays, and is held back before a retry.

        Returns True for the first refusal of this id (so the caller raises one
        alert per message, even across restarts), False otherwise or when the
        id is unknown or already sent.
        """
        db = self._writable()
        at = _ts(now)
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT refused_count FROM outbox WHERE id = ? AND sent_at IS NULL", (id,)
            ).fetchone()
            if row is None:
                db.execute("COMMIT")
                return False
            count = int(row["refused_count"]) + 1
            delay = min(self._retry_max_s, self._retry_base_s * 2 ** min(count - 1, 32))
            db.execute(
                "UPDATE outbox SET refused_code = ?, refused_count = ?, retry_at = ? WHERE id = ?",
                (reason_code, count, at + delay, id),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return count == 1

    # -- outbox: reading ---------------------------------------------------------

    def pending(self, limit: int = 100, *, now: datetime | None = None) -> list[OutboxMessage]:
        """Unsent messages in order, except refused ones still waiting for their retry."""
        rows = self._db.execute(
            "SELECT id, topic, payload, qos, retain FROM outbox "
            "WHERE sent_at IS NULL AND (retry_at IS NULL OR retry_at <= ?) "
            "ORDER BY seq LIMIT ?",
            (_ts(now), limit),
        ).fetchall()
        return [_message(r) for r in rows]

    def next_retry_at(self) -> datetime | None:
        """When the earliest held-back refused message may go again (None: none waits)."""
        row = self._db.execute(
            "SELECT MIN(retry_at) FROM outbox WHERE sent_at IS NULL AND retry_at IS NOT NULL"
        ).fetchone()
        return None if row[0] is None else _dt(row[0])

    def refusals(self) -> list[Refusal]:
        """Messages the broker refused that are still in the outbox, in order."""
        rows = self._db.execute(
            "SELECT id, topic, payload, qos, retain, refused_code, refused_count, retry_at "
            "FROM outbox WHERE sent_at IS NULL AND refused_count > 0 ORDER BY seq"
        ).fetchall()
        return [
            Refusal(
                message=_message(r),
                reason_code=r["refused_code"],
                count=r["refused_count"],
                retry_at=_dt(r["retry_at"]),
            )
            for r in rows
        ]

    def outbox_depth(self) -> int:
        """How many messages are not yet acknowledged by the broker."""
        return int(
            self._db.execute("SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL").fetchone()[0]
        )

    def oldest_pending_age_s(self, now: datetime) -> float | None:
        """Age of the oldest unsent message in seconds, None when the outbox is empty."""
        row = self._db.execute(
            "SELECT MIN(enqueued_at) FROM outbox WHERE sent_at IS NULL"
        ).fetchone()
        if row[0] is None:
            return None
        return max(0.0, _ts(now) - float(row[0]))

    def sent_messages(self, topic_suffix: str, limit: int) -> list[OutboxMessage]:
        """The last ``limit`` sent messages whose last topic level is ``topic_suffix``.

        Oldest first, e.g. ``sent_messages("rounds", 20)`` for the last 20
        round records.
        """
        if "/" in topic_suffix:
            raise ValueError("topic_suffix: give the last topic level, e.g. 'rounds'")
        rows = self._db.execute(
            "SELECT id, topic, payload, qos, retain FROM ("
            "  SELECT seq, id, topic, payload, qos, retain FROM outbox"
            "  WHERE kind = ? AND sent_at IS NOT NULL ORDER BY seq DESC LIMIT ?"
            ") ORDER BY seq",
            (topic_suffix, limit),
        ).fetchall()
        return [_message(r) for r in rows]

    # -- lifetime ---------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = [
    "REFUSED_RETRY_BASE_S",
    "REFUSED_RETRY_MAX_S",
    "DuplicateMessageId",
    "Journal",
    "JournalError",
    "OutboxMessage",
    "Refusal",
]
