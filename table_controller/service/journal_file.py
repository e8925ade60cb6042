"""Opening a journal file: the lock, the pragmas, the check, the schema.

* **One process at a time** (docs/rules.md, last paragraph): the writer holds an
  exclusive ``flock`` on ``<file>.lock`` for its whole life and writes who it
  is into that file, so a second process is refused with the holder named.
  Readers (``history``, ``journal verify``) take no lock: WAL lets them read
  while the table writes.
* **Durable**: WAL with ``synchronous = FULL``: a commit that returned has
  reached the disk. ``auto_vacuum = INCREMENTAL`` so that pruned pages go back
  to the file system.
* **Checked**: ``PRAGMA quick_check`` at open. A damaged file is refused with
  its name and what to do, never replayed into a crash loop.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TextIO

from table_controller.service.errors import (
    JournalCorrupt,
    JournalError,
    JournalFault,
    JournalLocked,
)
from table_controller.service.outbox import DDL, MIGRATE_1, SCHEMA_VERSION

BUSY_TIMEOUT_MS: Final = 5000


def damaged(path: Path, what: object) -> JournalCorrupt:
    """The error for a damaged journal: the file, the finding, and what to do."""
    return JournalCorrupt(
        f"{path}: the journal is damaged ({what}). The table cannot start on it. Keep the "
        f"file for inspection: stop the service, move it aside (mv {path} {path}.damaged, "
        f"with its -wal file), then start again with a new journal or one restored from backup"
    )


class JournalLock:
    """An exclusive lock on ``<journal>.lock`` that names its holder."""

    def __init__(self, journal: Path) -> None:
        self.path = journal.with_name(journal.name + ".lock")
        self._file: TextIO | None = None

    def acquire(self, journal: Path) -> None:
        f = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held for the journal's life)
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise JournalLocked(
                f"{journal}: in use by {holder} (lock {self.path}); only one controller may "
                "run a table's journal: stop the other one, or give this config its own "
                "[storage] path"
            ) from None
        except OSError as exc:
            f.close()
            raise JournalError(f"{self.path}: cannot lock: {exc.strerror}") from exc
        f.seek(0)
        f.truncate()
        started = datetime.now(UTC).isoformat(timespec="seconds")
        f.write(f"pid {os.getpid()} on {socket.gethostname()} since {started}\n")
        f.flush()
        self._file = f

    def release(self) -> None:
        if self._file is not None:
            # Closing the file releases the flock; the file stays (its holder line is stale).
            self._file.close()
            self._file = None


def opening_failed(path: Path, exc: sqlite3.DatabaseError) -> JournalError:
    """Damaged only when SQLite says so: a full disk (``SQLITE_FULL``) or an I/O error
    (``SQLITE_IOERR``: a WAL file that cannot grow) fails on a sound file as well, and
    moving that file aside would throw a good journal away."""
    code = getattr(exc, "sqlite_errorname", "")
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or not code:
        return damaged(path, exc)
    return JournalFault(
        f"{path}: cannot open ({exc}, {code}); the file itself may be sound. Free space on "
        "the journal's disk or fix the disk, then start again"
    )


def connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    """The journal's connection, checked and in its schema; readers change nothing."""
    if readonly:
        if not path.is_file():
            raise JournalError(f"{path}: no journal there")
        uri = f"{path.resolve().as_uri()}?mode=ro"
        db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(f"{path}: cannot create its directory: {exc.strerror}") from exc
        try:
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise JournalError(f"{path}: cannot open: {exc}") from exc
    db.row_factory = sqlite3.Row
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _check_kind(db, path)
        if not readonly:
            new = not _tables(db)
            if new:
                # Must precede the first table: an existing file keeps its mode.
                db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise JournalError(f"{path}: cannot switch to WAL (got {mode})")
            # FULL: every commit is synced to disk before record() returns.
            db.execute("PRAGMA synchronous = FULL")
            _create(db)
        _quick_check(db, path)
    except sqlite3.DatabaseError as exc:
        db.close()
        raise opening_failed(path, exc) from exc
    except BaseException:
        db.close()
        raise
    return db


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _check_kind(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a newer journal, or another program's database, before writing to it."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"{path}: written by a newer version (schema {version}); upgrade the table controller"
        )
    tables = _tables(db)
    if tables and "meta" not in tables:
        raise JournalError(f"{path}: another program's database, not a journal")


def _quick_check(db: sqlite3.Connection, path: Path) -> None:
    rows = [str(r[0]) for r in db.execute("PRAGMA quick_check(5)")]
    if rows != ["ok"]:
        raise damaged(path, "quick_check: " + "; ".join(rows))


def _create(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == 1:
            db.execute(MIGRATE_1)
        for statement in DDL.split(";"):
            if statement.strip():
                db.execute(statement)
        have = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
        if have is None:
            # A new file is a new journal: a new epoch, so that subscribers
            # see that event `seq` numbers start again (docs/feed.md).
            now = datetime.now(UTC)
            db.execute("INSERT INTO meta VALUES ('epoch', ?)", (str(uuid.uuid4()),))
            db.execute("INSERT INTO meta VALUES ('created', ?)", (now.isoformat(),))
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
