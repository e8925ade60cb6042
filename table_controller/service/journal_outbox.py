"""The journal's queries (checkpoints, the outbox) and its pruning (``journal.py`` writes).

Pruning keeps the disk bounded (issue 11): sent messages, and inputs before a
checkpoint, go once older than ``keep_days`` and, under ``acked``, acknowledged
by every recorder (docs/feed.md ``ack``). Unsent messages are never pruned.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final, Literal, TypeVar

from table_controller.service.outbox import SQL, OutboxMessage, Refusal, dt, message, ts

# Pages handed back to the file system per prune (4 kB each).
_VACUUM_PAGES: Final = 2000
DAY_S: Final = 86400.0
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Pruned:
    """What one prune removed."""

    messages: int
    inputs: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The engine's state after input ``input_n`` (``checkpoint.py`` reads ``body``)."""

    input_n: int
    version: int
    body: str


class OutboxQueries:
    """What the publisher, the inbox and the tools ask of the outbox; and the prune."""

    path: Path
    _db: sqlite3.Connection

    def _writable(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _transaction(self, work: Callable[[sqlite3.Connection], T], *, synced: bool = True) -> T:
        raise NotImplementedError

    def meta(self) -> dict[str, str]:
        raise NotImplementedError

    # -- checkpoints ---------------------------------------------------------------

    def latest_checkpoint(self) -> Checkpoint | None:
        row = self._db.execute(SQL.LATEST_CHECKPOINT).fetchone()
        return None if row is None else Checkpoint(row[0], row[1], row[2])

    def checkpoints(self, *, after: int = -1) -> Iterator[Checkpoint]:
        """Every checkpoint held, oldest first (one row read at a time)."""
        last = after
        while True:
            row = self._db.execute(SQL.CHECKPOINTS_FROM, (last,)).fetchone()
            if row is None:
                return
            last = row[0]
            yield Checkpoint(row[0], row[1], row[2])

    def record_ack(self, recorder: str, feed_seq: int, *, now: datetime | None = None) -> None:
        """A recorder committed every message up to ``feed_seq`` (docs/feed.md ``ack``)."""
        at = ts(now)
        self._transaction(
            lambda db: db.execute(SQL.UPSERT_ACK, (recorder, feed_seq, at)), synced=False
        )

    def prune(
        self,
        *,
        keep_days: float,
        mode: Literal["acked", "age"] = "acked",
        keep_rounds: int = 100,
        recorders: Sequence[str] = (),
        now: datetime | None = None,
    ) -> Pruned:
        """Drop what is sent (and, under ``acked``, acknowledged) and older than ``keep_days``.

        Never an unsent message, never the last ``keep_rounds`` round records
        (``history --last`` works from the table alone), never an input after
        the checkpoint the oldest kept input follows. Pages freed go back to
        the file system (incremental vacuum). ``recorders``: under ``acked``, the
        recorders whose acks count, each of them needed (none: every one that acked).
        """
        cutoff = ts(now) - keep_days * DAY_S
        db = self._writable()

        def work(db: sqlite3.Connection) -> Pruned:
            bounds: list[int] = []
            row = db.execute(SQL.FEED_BEFORE_TIME, (cutoff,)).fetchone()
            bounds.append(0 if row is None else int(row[0]))
            if mode == "acked":
                bounds.append(_acked(db, recorders))
            row = db.execute(SQL.NTH_NEWEST_FEED_OF_KIND, ("rounds", keep_rounds - 1)).fetchone()
            if row is not None and row[0] is not None:
                bounds.append(int(row[0]) - 1)
            elif keep_rounds > 0:
                bounds.append(0)
            # The counter must survive the messages that carried it (docs/feed.md).
            top = db.execute(SQL.LAST_FEED_SEQ).fetchone()[0]
            if top is not None:
                db.execute(SQL.SET_META, ("feed_seq_floor", str(int(top))))
            messages = db.execute(SQL.PRUNE_FEED, (min(bounds),)).rowcount
            inputs = 0
            row = db.execute(SQL.INPUT_BEFORE_TIME, (cutoff,)).fetchone()
            if row is not None:
                # Inputs go only up to a checkpoint: a restart and `journal verify`
                # start from one.
                ck = db.execute(SQL.CHECKPOINT_AT_OR_BEFORE, (int(row[0]),)).fetchone()
                if ck is not None:
                    inputs = db.execute(SQL.DELETE_INPUTS, (int(ck[0]),)).rowcount
                    db.execute(SQL.DELETE_CHECKPOINTS, (int(ck[0]),))
            return Pruned(messages=messages, inputs=inputs)

        pruned = self._transaction(work, synced=False)
        if pruned.messages or pruned.inputs:
            with contextlib.suppress(sqlite3.Error):
                # Stepped to the end by executescript (one execute() step frees one page).
                db.executescript(f"PRAGMA incremental_vacuum({_VACUUM_PAGES});")
        return pruned

    # -- outbox: reading ---------------------------------------------------------

    def pending(self, limit: int = 100, *, now: datetime | None = None) -> list[OutboxMessage]:
        """Unsent messages in order, except refused ones still waiting for their retry."""
        rows = self._db.execute(SQL.PENDING, (ts(now), limit)).fetchall()
        return [message(r) for r in rows]

    def next_retry_at(self) -> datetime | None:
        """When the earliest held-back refused message may go again (None: none waits)."""
        row = self._db.execute(SQL.NEXT_RETRY).fetchone()
        return None if row[0] is None else dt(row[0])

    def refusals(self) -> list[Refusal]:
        """Messages the broker refused that are still in the outbox, in order."""
        rows = self._db.execute(SQL.REFUSALS).fetchall()
        return [
            Refusal(
                message=message(r),
                reason_code=r["refused_code"],
                count=r["refused_count"],
                retry_at=dt(r["retry_at"]),
            )
            for r in rows
        ]

    def outbox_depth(self) -> int:
        """How many messages are not yet acknowledged by the broker."""
        return int(self._db.execute(SQL.DEPTH).fetchone()[0])

    def oldest_pending_age_s(self, now: datetime) -> float | None:
        """Age of the oldest unsent message in seconds, None when the outbox is empty."""
        row = self._db.execute(SQL.OLDEST_UNSENT).fetchone()
        if row[0] is None:
            return None
        return max(0.0, ts(now) - float(row[0]))

    def sent_messages(self, topic_suffix: str, limit: int) -> list[OutboxMessage]:
        """The last ``limit`` sent messages whose last topic level is ``topic_suffix``.

        Oldest first, e.g. ``sent_messages("rounds", 20)`` for the last 20
        round records.
        """
        return self._of_kind(SQL.SENT_OF_KIND, topic_suffix, limit)

    def last_messages(self, topic_suffix: str, limit: int) -> list[OutboxMessage]:
        """The last ``limit`` messages of a kind, sent or not, oldest first."""
        return self._of_kind(SQL.LAST_OF_KIND, topic_suffix, limit)

    def message_by_id(self, id: str) -> OutboxMessage | None:
        row = self._db.execute(SQL.BY_ID, (id,)).fetchone()
        return None if row is None else message(row)

    def _of_kind(self, sql: str, kind: str, limit: int) -> list[OutboxMessage]:
        if "/" in kind:
            raise ValueError("topic_suffix: give the last topic level, e.g. 'rounds'")
        return [message(r) for r in self._db.execute(sql, (kind, limit)).fetchall()]

    def last_feed_seq(self) -> int:
        """The newest ``feed_seq`` enqueued (0: none yet); pruning keeps it (``feed_seq_floor``)."""
        row = self._db.execute(SQL.LAST_FEED_SEQ).fetchone()
        floor = self.meta().get("feed_seq_floor", "0")
        return max(int(row[0] or 0), int(floor))

    def feed_range(self, first: int, last: int) -> list[tuple[int, OutboxMessage]]:
        """The non-retained messages with ``feed_seq`` in ``first..last``, in order."""
        rows = self._db.execute(SQL.FEED_RANGE, (first, last)).fetchall()
        return [(int(r["feed_seq"]), message(r)) for r in rows]


def _acked(db: sqlite3.Connection, recorders: Sequence[str]) -> int:
    """What every recorder that counts has acknowledged (0: not each of them yet)."""
    if not recorders:
        acked = db.execute(SQL.MIN_ACK).fetchone()[0]
        return 0 if acked is None else int(acked)
    named = sorted(set(recorders))
    marks = ", ".join("?" * len(named))
    count, acked = db.execute(
        f"SELECT COUNT(*), MIN(feed_seq) FROM acks WHERE recorder IN ({marks})", named
    ).fetchone()
    return int(acked) if count == len(named) and acked is not None else 0
