"""The dealer console's frames (docs/devices.md, "Dealer console").

Console → controller (reports)::

    $BTN,<k>,<action>[,<arg>]
    $STATUS,<last k>

Controller → console (commands)::

    $ACK,<k>
    $NAK,<k>,<REASON>
    $SHOW,<text>

The argument of a press is kept as the text the console sent: whether
``WAR,9`` names a position of this table or ``CARD,ZZ`` a card is the game's
question, answered with ``NAK,<k>,BAD_POSITION`` / ``BAD_CARD``, so the codec
must let such presses through.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Self

from drivers.errors import FrameError
from drivers.lineframe.cards import Card
from drivers.lineframe.codec import (
    MAX_BODY_BYTES,
    CountFrame,
    LineFrame,
    check_token,
    expect_fields,
    frame_parser,
    parse_count,
)


class ConsoleAction(StrEnum):
    """The buttons of the dealer console (docs/devices.md, ``BTN`` actions)."""

    SHUFFLED = "SHUFFLED"
    DEALER = "DEALER"
    NO_MORE_BETS = "NO_MORE_BETS"
    SURRENDER = "SURRENDER"
    WAR = "WAR"
    SKIP = "SKIP"
    """§(h)(3)(iii): one position is left out of the deal (its cards were not dealt to it)."""
    CARD = "CARD"
    CONFIRM = "CONFIRM"
    VOID_ROUND = "VOID_ROUND"

    @property
    def arg_name(self) -> str | None:
        """What the action's argument is, as the console's help writes it (None: no argument)."""
        return _ARG_NAMES.get(self)

    @property
    def takes_arg(self) -> bool:
        """``DEALER,<id>``, ``SURRENDER,<pos>``, ``WAR,<pos>``, ``SKIP,<pos>`` and
        ``CARD,<card>`` carry one."""
        return self in _ARG_NAMES


_POSITION_ACTIONS = frozenset({ConsoleAction.SURRENDER, ConsoleAction.WAR, ConsoleAction.SKIP})
"""The actions whose argument names a position of the table."""
_ARG_NAMES = {
    **dict.fromkeys(_POSITION_ACTIONS, "POSITION"),
    ConsoleAction.DEALER: "DEALER_ID",
    ConsoleAction.CARD: "CARD",
}


class NakReason(StrEnum):
    """The refusal codes docs/devices.md names; ``NAK`` accepts any code of the same form."""

    NOT_NOW = "NOT_NOW"
    NO_WAR_WAGER = "NO_WAR_WAGER"
    BAD_POSITION = "BAD_POSITION"
    BAD_CARD = "BAD_CARD"
    DEVICE_OFFLINE = "DEVICE_OFFLINE"
    """A device the press needs is offline (``NO_MORE_BETS`` with the sensor board away
    would latch a stale snapshot)."""
    JOURNAL_FAULT = "JOURNAL_FAULT"
    """The press could not be journaled, so it was not acted on."""


_REASON = re.compile(r"[A-Z][A-Z0-9_]*")
SHOW_MAX_CHARS = MAX_BODY_BYTES - len("SHOW,")
"""The longest display line one ``SHOW`` frame carries."""


def _check_reason(text: str) -> str:
    if not _REASON.fullmatch(text):
        raise FrameError(f"NAK reason must be an upper-case code such as NOT_NOW: {text!r}")
    return text


@dataclass(frozen=True, slots=True)
class ButtonFrame(LineFrame):
    """Button press number ``k``; ``arg`` as sent, None for actions without one.

    A press whose action is unknown, or whose argument is missing or extra, is
    still a press: docs/devices.md gives every press exactly one ``ACK`` or ``NAK``, so
    it goes on to be refused (``UNKNOWN_ACTION``, ``BAD_ARGUMENT``) rather than
    dropped with no answer. ``action`` is then the text the console sent.
    """

    TAG: ClassVar[str] = "BTN"
    k: int
    action: ConsoleAction | str
    arg: str | None = None

    @property
    def well_formed(self) -> bool:
        """A known action with its argument where it takes one and none where not."""
        return isinstance(self.action, ConsoleAction) and self.action.takes_arg == (
            self.arg is not None
        )

    def fields(self) -> tuple[str, ...]:
        head = (str(self.k), str(self.action))
        return head if self.arg is None else (*head, self.arg)

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        if len(fields) not in (2, 3):
            raise FrameError(f"expected '<k>,<action>[,<arg>]', got {len(fields)} field(s)")
        k = parse_count(fields[0], "k", minimum=1)
        action: ConsoleAction | str
        try:
            action = ConsoleAction(fields[1])
        except ValueError:
            action = check_token(fields[1], "button action")
        arg = check_token(fields[2], "button argument") if len(fields) == 3 else None
        return cls(k, action, arg)

    @property
    def position(self) -> int | None:
        return press_position(self.action, self.arg)

    @property
    def card(self) -> Card | None:
        return press_card(self.action, self.arg)


def press_position(action: ConsoleAction | str, arg: str | None) -> int | None:
    """The position a ``SURRENDER``/``WAR``/``SKIP`` press names, None if its argument is no
    number."""
    if action not in _POSITION_ACTIONS or arg is None:
        return None
    return int(arg) if arg.isascii() and arg.isdigit() and len(arg) <= 3 else None


def press_card(action: ConsoleAction | str, arg: str | None) -> Card | None:
    """The card a ``CARD`` press enters, None if its argument is not a card."""
    if action is not ConsoleAction.CARD or arg is None:
        return None
    try:
        return Card.parse(arg)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ConsoleStatusFrame(CountFrame):
    """Heartbeat, at least once a second: the number of the last press made."""

    TAG: ClassVar[str] = "STATUS"
    COUNT: ClassVar[str] = "last k"
    MINIMUM: ClassVar[int] = 0
    last_k: int


@dataclass(frozen=True, slots=True)
class AckFrame(CountFrame):
    """Press ``k`` accepted."""

    TAG: ClassVar[str] = "ACK"
    COUNT: ClassVar[str] = "k"
    k: int


@dataclass(frozen=True, slots=True)
class NakFrame(LineFrame):
    """Press ``k`` refused, with a reason code."""

    TAG: ClassVar[str] = "NAK"
    k: int
    reason: str

    def __post_init__(self) -> None:
        _check_reason(self.reason)

    def fields(self) -> tuple[str, ...]:
        return (str(self.k), str(self.reason))

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        expect_fields(fields, "<k>,<REASON>")
        return cls(parse_count(fields[0], "k", minimum=1), _check_reason(fields[1]))


@dataclass(frozen=True, slots=True)
class ShowFrame(LineFrame):
    """A line for the console's display; it may hold commas (it is the rest of the body)."""

    TAG: ClassVar[str] = "SHOW"
    text: str

    def fields(self) -> tuple[str, ...]:
        return (self.text,)

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        if not fields:
            raise FrameError("SHOW needs a text")
        return cls(",".join(fields))


Answer = AckFrame | NakFrame
ConsoleReport = ButtonFrame | ConsoleStatusFrame
ConsoleCommand = AckFrame | NakFrame | ShowFrame

parse_report: Callable[[str], ConsoleReport] = frame_parser(ButtonFrame, ConsoleStatusFrame)
"""Body → console report (what the controller receives); FrameError for anything else."""

parse_command: Callable[[str], ConsoleCommand] = frame_parser(AckFrame, NakFrame, ShowFrame)
"""Body → console command (what a console receives); FrameError for anything else."""


def fit_show_text(text: str) -> str:
    """``text`` made fit for one SHOW frame: printable ASCII, '$'/'*' replaced, cut to length.

    The display line is for people; a long or exotic line is shortened rather
    than refused, so a status message never stops the table.
    """
    cleaned = "".join(c if " " <= c <= "~" and c not in "$*" else "?" for c in text)
    return cleaned[:SHOW_MAX_CHARS]
