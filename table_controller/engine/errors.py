"""The engine's errors, by what the caller can do about them.

The engine never raises on an input (an illegal input is a refusal with a
reason); these are for the data it is built from or restored from:

- ``EngineError``: the root.
  - ``RulesError`` (fix the config): a rules profile or table setup that
    cannot be played; ``key`` names the field (dotted under ``[profile]``).
  - ``JournalDataError`` (stop and inspect the journal): an input or a
    snapshot whose stored form is malformed; the message names the field.
    ``SnapshotError`` is the snapshot's kind, also for one taken of another
    table setup or of an unknown version.

``RulesError`` and ``JournalDataError`` are also ``ValueError``\\ s, so a
validator at the edge (pydantic) reports them against the key being read.
"""

from __future__ import annotations


class EngineError(Exception):
    """Any error of the engine's own data."""


class RulesError(EngineError, ValueError):
    """A rules profile, limits or table setup outside what can be played."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


class JournalDataError(EngineError, ValueError):
    """A journaled input or a stored snapshot is malformed."""


class SnapshotError(JournalDataError):
    """A snapshot that cannot be restored: malformed, another version or another table."""
