"""The web pit display's errors, sorted by what the caller can do."""

from __future__ import annotations


class WebError(Exception):
    """Root of the web display's errors."""


# -- fix the config or the command line -----------------------------------------


class UsersFileError(WebError, ValueError):
    """The users file (or its secret) cannot be used; the message names the file."""


class TlsConfigError(WebError, ValueError):
    """The certificate or key cannot be used; the message names the file."""
