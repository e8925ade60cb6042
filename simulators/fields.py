"""The text a simulator puts in a field of a line frame, checked where it enters.

docs/devices.md, "Line framing": a body is printable ASCII without ``$`` (which starts a
frame) or ``*`` (which ends its body), its fields are split at commas, and a frame is at
most 96 bytes. A press argument or a shoe's serial that breaks this would go out as a
frame no driver accepts, and a console sends an unanswered press again for ever; so it is
refused at once, saying what is wrong.
"""

from __future__ import annotations

from drivers.lineframe.codec import LineFrame
from simulators.errors import FrameFieldError


def _fault(char: str) -> str | None:
    """What ``char`` would do to a frame, None if it may stand in a field."""
    if char == ",":
        return "a comma, which would split it into two fields"
    if char in "$*":
        return f"{char!r}, which delimits a frame"
    if " " <= char <= "~":
        return None
    kind = "control" if char.isascii() else "non-ASCII"
    return f"the {kind} character {char!r}; a frame is printable ASCII"


def check_field(text: str, what: str) -> str:
    """``text`` if it can stand as one field of a frame, else FrameFieldError naming
    ``what`` and what is wrong: empty, or holding a comma, ``$``, ``*`` or a byte that is
    not printable ASCII."""
    if not text:
        raise FrameFieldError(f"{what} is empty; a driver reads no empty field")
    for char in text:
        if (fault := _fault(char)) is not None:
            raise FrameFieldError(f"{what} {text!r} holds {fault}")
    return text


def check_fits(frame: LineFrame, what: str) -> None:
    """FrameFieldError naming ``what`` unless ``frame`` encodes (it fits 96 bytes)."""
    try:
        frame.encode()
    except ValueError as exc:
        raise FrameFieldError(f"{what}: {exc}") from None
