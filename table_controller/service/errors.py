"""The service's errors, sorted by what the caller can do.

* retry: :class:`JournalFault` (a commit failed: disk full, I/O error; the input
  was not acted on, and the same work succeeds once there is room again).
* fix the setup: :class:`JournalLocked` (another process holds the journal),
  :class:`JournalMismatch` (the journal belongs to another table, or its settings
  cannot change now).
* fatal for this file: :class:`JournalCorrupt` (stop; move the file aside).

Every message names the file and says what to do. The exit statuses below are
what ``table-controller run`` returns, so that the systemd unit's
``RestartPreventExitStatus=`` stops a restart loop that cannot help.
"""

from __future__ import annotations

from typing import Final

EXIT_CONFIG: Final = 2
"""A config or broker setting is wrong: restarting cannot help."""
EXIT_JOURNAL: Final = 3
"""The journal is damaged or belongs to another table: restarting cannot help."""
EXIT_IDENTITY: Final = 4
"""Another controller that started earlier runs this table (docs/feed.md): this one yielded."""


class JournalError(RuntimeError):
    """The journal file cannot be used; the message names the file and what to do."""


class JournalFault(JournalError):
    """A commit failed (disk full, I/O error): nothing of it was written. Retry later."""


class JournalLocked(JournalError):
    """Another process holds the journal; the message names it."""


class JournalMismatch(JournalError):
    """The journal belongs to another table, or a setting changed when it may not."""


class JournalCorrupt(JournalError):
    """The file is damaged: it fails SQLite's check or holds an unreadable row."""


class IdentityYielded(RuntimeError):
    """Another controller that started earlier runs this table: this one stopped (docs/feed.md)."""


class DuplicateMessageId(ValueError):
    """A message was enqueued with an ``id`` already in the outbox (a producer bug)."""


__all__ = [
    "EXIT_CONFIG",
    "EXIT_IDENTITY",
    "EXIT_JOURNAL",
    "DuplicateMessageId",
    "IdentityYielded",
    "JournalCorrupt",
    "JournalError",
    "JournalFault",
    "JournalLocked",
    "JournalMismatch",
]
