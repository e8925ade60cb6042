"""The durable journal and outbox: one SQLite file per table.

Everything the table knows is rebuilt from the journal after a restart
(docs/rules.md, last paragraph): every device input is appended here, and the
messages it produced are enqueued in the *same* transaction, the input's one
fsync, before the service acts on the input or publishes anything. Nothing is
lost when the broker is away or the controller dies (docs/feed.md): messages wait
in the outbox and go out, in order, when the broker is back. Checkpoints of
the engine's state after an input follow it in a commit of their own, so a
restart replays only the inputs after the latest one.

Outbox rules
------------

* **Order.** Messages are published in the order they were enqueued (the
  ``seq`` column). Non-retained messages are never dropped, merged or reordered
  by the outbox; each carries ``feed_seq`` (docs/feed.md).
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
  :meth:`Journal.pending` skips it, so the messages behind it keep flowing.
* **At least once.** A message is marked sent only after the broker
  acknowledged it. The mark is committed without an fsync of its own (the next
  input's commit carries it to the disk): a mark lost in a crash only sends the
  message again, with the same ``id``.
* **Bounded.** :meth:`Journal.prune` drops sent messages and the inputs before
  a checkpoint once they are old enough (and, under ``acked``, acknowledged by
  every recorder); unsent messages are never pruned.

The journal is used from one thread (the service's event loop). Another
process may read it at the same time (``readonly=True``), for example the
``history`` command; only one process may write it (``journal_file.py``).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

from table_controller.service.errors import (
    DuplicateMessageId,
    JournalError,
    JournalFault,
)
from table_controller.service.journal_file import JournalLock, connect, damaged
from table_controller.service.journal_outbox import Checkpoint, OutboxQueries, Pruned
from table_controller.service.outbox import SQL, OutboxMessage, Refusal, ts

# Refused messages wait this long before they are offered again, doubling per refusal.
REFUSED_RETRY_BASE_S: Final = 5.0
REFUSED_RETRY_MAX_S: Final = 300.0
# Replay reads inputs in chunks so that a long journal never sits in memory at once.
_REPLAY_CHUNK: Final = 256
T = TypeVar("T")


class Journal(OutboxQueries):
    """Inputs and checkpoints for replay and the outbox for the publisher, in one file.

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
        self._lock = JournalLock(self.path)
        if not readonly:
            self._lock.acquire(self.path)
        try:
            self._db = connect(self.path, readonly=readonly)
        except BaseException:
            self._lock.release()
            raise
        try:
            meta = self.meta()
            if "epoch" not in meta:
                raise JournalError(f"{self.path}: not a journal (no epoch)")
            self.epoch = meta["epoch"]
            self.created = datetime.fromisoformat(meta["created"])
        except BaseException:
            self.close()
            raise

    # -- transactions ----------------------------------------------------------

    def _writable(self) -> sqlite3.Connection:
        if self.readonly:
            raise JournalError(f"{self.path}: opened read-only")
        return self._db

    def _transaction(self, work: Callable[[sqlite3.Connection], T], *, synced: bool = True) -> T:
        """Run ``work`` in one write transaction; a failed commit is a :class:`JournalFault`.

        ``synced=False`` commits without an fsync (WAL, ``synchronous=NORMAL``):
        only for writes whose loss in a power cut does no harm; the next synced
        commit carries them to the disk.
        """
        db = self._writable()
        if not synced:
            db.execute("PRAGMA synchronous = NORMAL")
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
                db.execute("COMMIT")
            except BaseException:
                # SQLite may have rolled back already (disk full, I/O error).
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            code = getattr(exc, "sqlite_errorname", "")
            if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
                raise damaged(self.path, exc) from exc
            raise JournalFault(
                f"{self.path}: cannot commit ({exc}); nothing of it was written. "
                "Free space on the journal's disk or fix the disk; the table goes on when "
                "commits succeed again"
            ) from exc
        finally:
            if not synced:
                db.execute("PRAGMA synchronous = FULL")
        return result

    # -- identity ----------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        try:
            return {r[0]: r[1] for r in self._db.execute(SQL.META)}
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path}: not a journal: {exc}") from exc

    def set_meta(self, items: Mapping[str, str]) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.executemany(SQL.SET_META, list(items.items()))

        self._transaction(work)

    # -- inputs ----------------------------------------------------------------------

    def record(
        self,
        input_json: Mapping[str, Any],
        messages: Sequence[OutboxMessage],
        *,
        now: datetime | None = None,
    ) -> int:
        """Append one input and enqueue its messages: one commit.

        Returns the input's journal number (1, 2, …). Nothing is written
        when the input is not JSON, a message id is already in the outbox
        (:class:`DuplicateMessageId`) or the commit fails (:class:`JournalFault`).
        """
        body = json.dumps(
            dict(input_json), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
        at = ts(now)

        def work(db: sqlite3.Connection) -> int:
            n = db.execute(SQL.INSERT_INPUT, (at, body)).lastrowid
            assert n is not None
            self._insert(db, messages, at, n)
            return n

        return self._transaction(work)

    def record_settings(
        self,
        input_n: int,
        checkpoint: tuple[int, str],
        messages: Sequence[OutboxMessage],
        meta: Mapping[str, str],
        *,
        now: datetime | None = None,
    ) -> None:
        """A change of settings: the checkpoint after input ``input_n`` under the new
        settings, its messages and the recorded settings, in one commit."""
        at = ts(now)

        def work(db: sqlite3.Connection) -> None:
            db.execute(SQL.INSERT_CHECKPOINT, (input_n, at, checkpoint[0], checkpoint[1]))
            self._insert(db, messages, at, None)
            db.executemany(SQL.SET_META, list(meta.items()))

        self._transaction(work)

    def record_checkpoint(
        self, input_n: int, checkpoint: tuple[int, str], *, now: datetime | None = None
    ) -> None:
        """The engine's state after input ``input_n``, in a commit of its own without an
        fsync: losing it in a power cut only lengthens the next start's replay (the
        input itself is on the disk), and the next synced commit carries it there."""
        at = ts(now)

        def work(db: sqlite3.Connection) -> None:
            db.execute(SQL.INSERT_CHECKPOINT, (input_n, at, checkpoint[0], checkpoint[1]))

        self._transaction(work, synced=False)

    def inputs(self, *, after: int = 0) -> Iterator[dict[str, Any]]:
        """Every journaled input in order (optionally only those after number ``after``)."""
        for _, body in self.numbered_inputs(after=after):
            yield body

    def numbered_inputs(
        self, *, after: int = 0, upto: int | None = None
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """Journaled inputs with their numbers, in order: after ``after``, up to ``upto``."""
        last = after
        while True:
            if upto is None:
                rows = self._db.execute(SQL.INPUTS_AFTER, (last, _REPLAY_CHUNK)).fetchall()
            else:
                rows = self._db.execute(SQL.INPUTS_BETWEEN, (last, upto, _REPLAY_CHUNK)).fetchall()
            if not rows:
                return
            for row in rows:
                last = row["n"]
                try:
                    body = json.loads(row["body"])
                except json.JSONDecodeError as exc:
                    raise damaged(self.path, f"input {last} is not JSON: {exc}") from exc
                yield last, body

    def last_input_number(self) -> int:
        """The journal number of the last input ever taken (pruned or not), 0 before any."""
        row = self._db.execute(SQL.LAST_INPUT).fetchone()
        return 0 if row is None else int(row[0])

    def first_input_number(self) -> int | None:
        """The oldest input still held (None: none is)."""
        row = self._db.execute(SQL.FIRST_INPUT).fetchone()
        return None if row[0] is None else int(row[0])

    # -- outbox: writing ---------------------------------------------------------

    def enqueue(
        self,
        messages: Sequence[OutboxMessage],
        *,
        now: datetime | None = None,
        synced: bool = True,
    ) -> None:
        """Enqueue messages not tied to an input (the status on connect, say).

        ``synced=False`` for values rebuilt from the journal anyway (the retained
        ``state`` and ``stats``): they cost no fsync of their own.
        """
        if not messages:
            return
        at = ts(now)
        self._transaction(lambda db: self._insert(db, messages, at, None), synced=synced)

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
                db.execute(SQL.DROP_UNSENT_RETAINED, (msg.topic,))
            try:
                db.execute(
                    SQL.INSERT_MESSAGE,
                    (
                        msg.id,
                        msg.topic,
                        msg.kind,
                        msg.payload,
                        msg.qos,
                        int(msg.retain),
                        input_n,
                        at,
                        msg.feed_seq,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise DuplicateMessageId(
                    f"message id {msg.id!r} (feed_seq {msg.feed_seq}) is already in the "
                    "outbox; give every message a new id"
                ) from exc

    def mark_sent(self, ids: Sequence[str], *, now: datetime | None = None) -> None:
        """The broker acknowledged these messages. Unknown or already sent ids are ignored.

        No fsync of its own: a mark lost in a crash sends the message again.
        """
        if not ids:
            return
        at = ts(now)

        def work(db: sqlite3.Connection) -> None:
            retained_topics: set[str] = set()
            for id_ in ids:
                row = db.execute(SQL.MARK_SENT, (at, id_)).fetchone()
                if row is not None and row["retain"]:
                    retained_topics.add(row["topic"])
            for topic in retained_topics:
                db.execute(SQL.DROP_OLD_RETAINED, (topic, topic))

        self._transaction(work, synced=False)

    def retry_delay(self, refusals: int) -> float:
        """Seconds a message refused ``refusals`` times waits before it goes again."""
        return min(self._retry_max_s, self._retry_base_s * 2.0 ** min(refusals - 1, 32))

    def mark_refused(self, id: str, reason_code: int, *, now: datetime | None = None) -> bool:
        """The broker refused this message: it stays, and is held back before a retry.

        Returns True for the first refusal of this id (so the caller raises one
        alert per message, even across restarts), False otherwise or when the
        id is unknown or already sent.
        """
        at = ts(now)

        def work(db: sqlite3.Connection) -> bool:
            row = db.execute(SQL.REFUSED_COUNT, (id,)).fetchone()
            if row is None:
                return False
            count = int(row["refused_count"]) + 1
            db.execute(SQL.MARK_REFUSED, (reason_code, count, at + self.retry_delay(count), id))
            return count == 1

        return self._transaction(work)

    # -- lifetime ---------------------------------------------------------------

    def close(self) -> None:
        with contextlib.suppress(AttributeError):
            self._db.close()
        self._lock.release()

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
    "Checkpoint",
    "DuplicateMessageId",
    "Journal",
    "JournalError",
    "JournalFault",
    "OutboxMessage",
    "Pruned",
    "Refusal",
]
