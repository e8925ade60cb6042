"""The card-reading shoe's frames (docs/devices.md, "Card-reading shoe").

Shoe → controller (reports)::

    $HELLO,<serial>,<firmware>,<last n>
    $CARD,<n>,<card>
    $MISREAD,<n>
    $COVER,<n>
    $STATUS,<last n>,<state>

Controller → shoe (commands)::

    $RESEND,<n>
    $INFO

Read numbers count from 1 since the shoe powered up; ``last n`` is 0 when
nothing was read since then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Self

from drivers.errors import FrameError
from drivers.lineframe.cards import Card
from drivers.lineframe.codec import (
    CountFrame,
    LineFrame,
    check_token,
    expect_fields,
    frame_parser,
    parse_count,
)


class ShoeCondition(StrEnum):
    """The state a shoe reports in its heartbeat."""

    OK = "OK"
    DOOR_OPEN = "DOOR_OPEN"
    JAM = "JAM"
    FAULT = "FAULT"


@dataclass(frozen=True, slots=True)
class HelloFrame(LineFrame):
    """On connect, at power-up (``last_n`` 0) and in answer to ``$INFO``."""

    TAG: ClassVar[str] = "HELLO"
    serial: str
    firmware: str
    last_n: int

    def fields(self) -> tuple[str, ...]:
        return (self.serial, self.firmware, str(self.last_n))

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        expect_fields(fields, "<serial>,<firmware>,<last n>")
        return cls(
            check_token(fields[0], "serial"),
            check_token(fields[1], "firmware"),
            parse_count(fields[2], "last n"),
        )


@dataclass(frozen=True, slots=True)
class CardFrame(LineFrame):
    """Card ``n`` was read."""

    TAG: ClassVar[str] = "CARD"
    n: int
    card: Card

    def fields(self) -> tuple[str, ...]:
        return (str(self.n), str(self.card))

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        expect_fields(fields, "<n>,<card>")
        try:
            card = Card.parse(fields[1])
        except ValueError as exc:
            raise FrameError(str(exc)) from exc
        return cls(parse_count(fields[0], "n", minimum=1), card)


@dataclass(frozen=True, slots=True)
class MisreadFrame(CountFrame):
    """Card ``n`` passed the reader but was not recognised."""

    TAG: ClassVar[str] = "MISREAD"
    COUNT: ClassVar[str] = "n"
    n: int


@dataclass(frozen=True, slots=True)
class CoverFrame(CountFrame):
    """The cover card passed the reader as read ``n``."""

    TAG: ClassVar[str] = "COVER"
    COUNT: ClassVar[str] = "n"
    n: int


@dataclass(frozen=True, slots=True)
class StatusFrame(LineFrame):
    """Heartbeat, at least once a second."""

    TAG: ClassVar[str] = "STATUS"
    last_n: int
    state: ShoeCondition

    def fields(self) -> tuple[str, ...]:
        return (str(self.last_n), self.state.value)

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        expect_fields(fields, "<last n>,<state>")
        try:
            state = ShoeCondition(fields[1])
        except ValueError as exc:
            raise FrameError(f"unknown shoe state {fields[1]!r}") from exc
        return cls(parse_count(fields[0], "last n"), state)


@dataclass(frozen=True, slots=True)
class ResendFrame(CountFrame):
    """Send again every read from ``n`` on (the shoe keeps the last 64)."""

    TAG: ClassVar[str] = "RESEND"
    COUNT: ClassVar[str] = "n"
    n: int


@dataclass(frozen=True, slots=True)
class InfoFrame(LineFrame):
    """Ask the shoe for ``HELLO``."""

    TAG: ClassVar[str] = "INFO"

    @classmethod
    def from_fields(cls, fields: Sequence[str]) -> Self:
        expect_fields(fields, "")
        return cls()


ReadFrame = CardFrame | MisreadFrame | CoverFrame
"""A frame that takes a read number: the ones ``RESEND`` sends again."""

ShoeReport = HelloFrame | CardFrame | MisreadFrame | CoverFrame | StatusFrame
ShoeCommand = ResendFrame | InfoFrame

parse_report: Callable[[str], ShoeReport] = frame_parser(
    HelloFrame, CardFrame, MisreadFrame, CoverFrame, StatusFrame
)
"""Body → shoe report (what the controller receives); FrameError for anything else."""

parse_command: Callable[[str], ShoeCommand] = frame_parser(ResendFrame, InfoFrame)
"""Body → shoe command (what a shoe receives); FrameError for anything else."""
