"""The round records' hash chain (docs/feed.md, "Tamper-evident records").

``hash`` is the SHA-256 (lower-case hex) of the record's RFC 8785 canonical
JSON without its ``hash`` member; ``prev_hash`` is the ``hash`` of the table's
previous round record in the same ``epoch`` (``null`` for the first). The
canonical form is the JSON Canonicalization Scheme's (sorted keys, no whitespace,
ECMAScript number form), so a table and a recorder written apart agree on every
byte. :func:`canonical` gives it: the standard library's C encoder for plain JSON
values with ASCII keys, integers within ±2⁵³ and fractions such as -0.5 (every
record the table writes), where its bytes are the scheme's; the ``rfc8785``
library, the reference, for anything else (about 2.5 times as slow on a round record).
``tests/service/test_canonical_json.py`` holds the two to the same bytes.

The table seals a record with :func:`seal` in the same journal transaction
that stores it, after every other member (``epoch`` and ``feed_seq``
included) is final: any member changed afterwards breaks the hash. A reader
checks one record with :func:`verifies` and a run of them with :func:`breaks`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import rfc8785

HASH: Final = "hash"
PREV_HASH: Final = "prev_hash"

BreakKind = Literal["hash", "link", "unsealed"]


class ChainError(ValueError):
    """The record cannot be put in canonical form (a float that is not finite, an integer
    beyond ±2⁵³, a key that is not text): fix the record, it can never be hashed."""


# Sorted keys, no whitespace, and strings escaped as RFC 8785 §3.2.2.2 has them: `"`, `\\`,
# \b \f \n \r \t by name, the other controls as \u00xx in lower case, nothing else.
_ENCODE: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode
_SAFE: Final = 2**53 - 1
_LEAVES: Final = frozenset({str, bool, type(None)})


def _plain(value: object) -> bool:
    """Whether the C encoder writes ``value`` as RFC 8785 does: only dicts with ASCII
    keys (sorted by code point, as UTF-16 sorts them), lists, strings, integers within
    ±(2⁵³ − 1), fractions written alike in both forms, booleans and null; no subclass."""
    stack = [value]
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind in _LEAVES:
            continue
        if isinstance(v, dict):
            # Keys that are all text (a str subclass writes as its text) and all ASCII.
            try:
                if kind is not dict or not "".join(v).isascii():
                    return False
            except TypeError:
                return False
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            if kind is not list and kind is not tuple:
                return False
            stack.extend(v)
        elif isinstance(v, int):
            if kind is not int or not -_SAFE <= v <= _SAFE:
                return False
        elif isinstance(v, float):
            # Python's shortest repr is ECMAScript's between 1e-4 and 1e16, but for a
            # whole number ("1.0" against "1"); a surrender's -0.5 is one of these.
            if kind is not float or not (1e-4 <= abs(v) < 1e16 and not v.is_integer()):
                return False
        else:
            return False
    return True


def canonical(value: object) -> bytes:
    """``value``'s RFC 8785 canonical JSON (UTF-8); ``rfc8785.CanonicalizationError``
    when it has none (a float that is not finite, an integer beyond ±2⁵³, a key that is
    not text, a lone surrogate)."""
    if _plain(value):
        try:
            return _ENCODE(value).encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: the library says so
    try:
        return rfc8785.dumps(value)  # type: ignore[arg-type]
    except UnicodeError as exc:  # a lone surrogate in a key: the library's sort fails on it
        raise rfc8785.CanonicalizationError("input contains non-UTF-8 codepoints") from exc


def record_hash(record: Mapping[str, Any]) -> str:
    """The record's ``hash``: SHA-256 of its canonical JSON without ``hash``."""
    body = {k: v for k, v in record.items() if k != HASH}
    try:
        text = canonical(body)
    except rfc8785.CanonicalizationError as exc:
        raise ChainError(f"a round record that cannot be canonicalised: {exc}") from exc
    return hashlib.sha256(text).hexdigest()


def seal(record: Mapping[str, Any], prev_hash: str | None) -> dict[str, Any]:
    """``record`` with ``prev_hash`` set and its ``hash`` computed over everything else."""
    sealed = {k: v for k, v in record.items() if k != HASH} | {PREV_HASH: prev_hash}
    return sealed | {HASH: record_hash(sealed)}


def verifies(record: Mapping[str, Any]) -> bool:
    """The record's own ``hash`` matches its content (False for an unsealed one, and for
    one that cannot be canonicalised: no hash was ever computed of it)."""
    stated = record.get(HASH)
    if not isinstance(stated, str):
        return False
    try:
        return stated == record_hash(record)
    except ChainError:
        return False


@dataclass(frozen=True, slots=True)
class Break:
    """Where a chain does not hold: ``round_id`` is the record that does not verify
    (``hash``), whose ``prev_hash`` is not its predecessor's ``hash`` (``link``: a record
    before it was altered or dropped), or that carries no hash in a sealed chain."""

    round_id: int
    kind: BreakKind
    detail: str


def link_break(previous: Mapping[str, Any] | None, record: Mapping[str, Any]) -> Break | None:
    """The break between ``previous`` (None: ``record`` opens its epoch) and ``record``."""
    round_id = int(record.get("round_id") or 0)
    if record.get(HASH) is None:
        sealed_before = previous is not None and previous.get(HASH) is not None
        if sealed_before or record.get(PREV_HASH) is not None:
            return Break(round_id, "unsealed", "no hash in a sealed chain")
        return None  # a table that does not seal its records yet: no chain to check
    if not verifies(record):
        return Break(round_id, "hash", "the record's hash does not match its content")
    expected = None if previous is None else previous.get(HASH)
    if record.get(PREV_HASH) != expected:
        before = "none" if previous is None else f"round {previous.get('round_id')}"
        return Break(
            round_id,
            "link",
            f"prev_hash is not the hash of the record before it ({before}): "
            "a record was altered or dropped",
        )
    return None


def breaks(
    records: Iterable[Mapping[str, Any]], previous: Mapping[str, Any] | None = None
) -> list[Break]:
    """Every break in one table's records of one epoch, given in chain order; ``previous``
    is what the first one links to (None: it opens the epoch)."""
    found: list[Break] = []
    for record in records:
        b = link_break(previous, record)
        if b is not None:
            found.append(b)
        previous = record
    return found
