"""What both databases can store of a message's values (docs/decisions/recorder.md).

PostgreSQL's text holds no NUL, and neither database's UTF-8 holds a lone
surrogate; a JSON escape (``\\u0000``, ``\\ud800``) makes either from plain
ASCII. Such characters are shown as U+FFFD in every value read from the
message, while its payload is kept as sent. A whole number beyond ±(2^53 − 1)
is no figure a table sends (nor one a browser reads exactly), and past 2^63 a
column cannot hold it: a body with one does not count as a round or alert.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

SHOWN: Final = "\ufffd"
TEXT_PROBLEM: Final = (
    "a NUL or a lone surrogate in its text, shown as U+FFFD; the payload is as sent"
)
LARGEST: Final = 2**53 - 1
_ESCAPE: Final = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_CHAR: Final = re.compile("[\x00\ud800-\udfff]")


def may_hold_unstorable(text: str) -> bool:
    """Cheap: could the JSON ``text`` decode to an unstorable character?"""
    return _ESCAPE.search(text) is not None


def read_json(text: str) -> Any:
    """A stored payload as it is shown: every unstorable character of it as U+FFFD. A
    round record is kept as sent (its hash is of those bytes), and read through this."""
    value = json.loads(text)
    return storable(value) if may_hold_unstorable(text) else value


def storable(value: Any) -> Any:
    """``value`` with every unstorable character of its texts (and keys) shown as U+FFFD."""
    if isinstance(value, str):
        return _CHAR.sub(SHOWN, value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value


def too_large(value: Any, path: str = "") -> str | None:
    """Where ``value`` holds a whole number beyond ±LARGEST (``a.b.0``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (path or "(the value)") if abs(value) > LARGEST else None
    items: Any = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, item in items:
        found = too_large(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None
