"""The feed's errors, sorted by what the caller can do.

* :class:`PayloadError`: a payload does not fit its model (an unknown ``schema``,
  not a JSON object, a field that fails): drop it and count it; the producer must
  be fixed. pydantic's ``ValidationError`` is raised as it is for a known schema
  (it is a ``ValueError`` too).
* :class:`EnvelopeMismatch`: a payload built for one table offered to the envelope
  of another: a defect in the caller, fatal.
"""

from __future__ import annotations


class FeedError(Exception):
    """Root of the feed's errors."""


class PayloadError(FeedError, ValueError):
    """A payload that is not one of the feed's: drop and count it."""


class EnvelopeMismatch(FeedError, ValueError):
    """A payload of one table published as another: a defect, fatal."""
