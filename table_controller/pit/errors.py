"""The pit display's errors, sorted by what the caller can do.

* :class:`PitConfigError`: the options are wrong; fix the one the message names.
* :class:`PitConnectError`: the broker cannot be reached or refused the pit; retry,
  or check the address and credentials. :class:`SubscriptionRefused` is one: ask
  for read access.
* :class:`MalformedPayload` and :class:`UnexpectedMessage` never leave the model:
  a message that does not fit docs/feed.md, or one this pit does not know, is counted
  and shown as a count, never raised to the display.
"""

from __future__ import annotations


class PitError(Exception):
    """Root of the pit display's errors."""


class PitConfigError(PitError, ValueError):
    """The pit cannot start with these options: fix the option the message names."""


class PitConnectError(PitError, ConnectionError):
    """The broker could not be reached or refused the pit: retry, or check the credentials."""


class SubscriptionRefused(PitConnectError):
    """The broker refused the pit's subscription (its access rules): ask for read access."""


class MalformedPayload(PitError, ValueError):
    """A payload that does not fit docs/feed.md: counted as malformed."""


class UnexpectedMessage(PitError, ValueError):
    """A message the pit does not know (topic, schema version): counted as unexpected."""
