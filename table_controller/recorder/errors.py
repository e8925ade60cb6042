"""The recorder's errors, sorted by what the caller can do."""

from __future__ import annotations


class RecorderError(Exception):
    """Root of the recorder's errors."""


# -- retry ----------------------------------------------------------------------


class DatabaseUnavailable(RecorderError):
    """The database cannot be reached or refused a commit for now: retry with backoff."""


# -- fix the config or the request -----------------------------------------------


class RecorderConfigError(RecorderError, ValueError):
    """The config cannot be used; the message names the key or the file."""


class BadParameter(RecorderError, ValueError):
    """A query parameter is invalid; ``name`` is the parameter (HTTP 400)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


class UnknownTable(RecorderError, LookupError):
    """No message of this table was ever stored (HTTP 404)."""


class RatingsError(RecorderError, ValueError):
    """A stored round names rules or overrides the odds cannot be computed for."""


# -- fatal ------------------------------------------------------------------------


class SchemaVersionError(RecorderError):
    """The database holds a newer schema than this recorder knows: upgrade the recorder."""
