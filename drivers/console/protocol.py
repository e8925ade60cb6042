"""The dealer console's link rules, sans I/O: presses, restarts, heartbeat.

docs/devices.md, "Dealer console": every press gets exactly one ``ACK`` or ``NAK``;
a press whose ``k`` was already answered (sent again after a reconnect) gets
the same answer again and is not acted on twice — which answer is the game's
business, so every press that arrives is handed on, repeats included. A
``STATUS`` whose last ``k`` is below the last press answered means the console
restarted: its numbering starts again and old answers are forgotten. No
heartbeat for 3 s: the session is dropped as silent.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.console.frames import (
    ButtonFrame,
    ConsoleAction,
    ConsoleCommand,
    ConsoleReport,
    ConsoleStatusFrame,
    press_card,
    press_position,
)
from drivers.lineframe.cards import Card
from drivers.lineframe.session import HEARTBEAT_TIMEOUT_S, LinkProtocol, Step


@dataclass(frozen=True, slots=True)
class ButtonPressed:
    """Press ``k``; ``arg`` as the console sent it (None for actions without one).

    Answer it with ``ConsoleClient.ack(k)`` or ``nak(k, reason)``. The same ``k`` may
    arrive again after a reconnect: answer it again with the same answer.
    """

    k: int
    action: ConsoleAction | str  # the text sent, for an action the console should not have
    arg: str | None = None

    @property
    def position(self) -> int | None:
        """The position of a ``SURRENDER``/``WAR``/``SKIP`` press; None if not a number
        (BAD_POSITION)."""
        return press_position(self.action, self.arg)

    @property
    def card(self) -> Card | None:
        """The card of a ``CARD`` press; None if not a card (BAD_CARD)."""
        return press_card(self.action, self.arg)


@dataclass(frozen=True, slots=True)
class ConsoleRestarted:
    """The console's numbering started again; answers given before are void."""


@dataclass(frozen=True, slots=True)
class ConsoleOnline:
    """The console is heard: first contact, or back after being offline."""


@dataclass(frozen=True, slots=True)
class ConsoleOffline:
    """The link to the console is down or it went silent; reported once per loss."""

    reason: str


ConsoleEvent = ButtonPressed | ConsoleRestarted | ConsoleOnline | ConsoleOffline


class ConsoleProtocol(LinkProtocol[ConsoleReport, ConsoleCommand, ConsoleEvent]):
    """Restart detection and the heartbeat watchdog of one dealer console."""

    def __init__(
        self, last_answered: int = 0, *, heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S
    ) -> None:
        self._heartbeat_timeout_s = heartbeat_timeout_s
        self._last_answered = last_answered
        self._heartbeat_deadline: float | None = None

    @property
    def last_answered(self) -> int:
        """The highest press number answered since the console's numbering last began."""
        return self._last_answered

    def answered(self, k: int) -> None:
        """Press ``k`` was answered (ACK or NAK sent)."""
        self._last_answered = max(self._last_answered, k)

    def connection_made(self, now: float) -> Step[ConsoleCommand, ConsoleEvent]:
        self._heartbeat_deadline = now + self._heartbeat_timeout_s
        return Step()

    def frame_received(
        self, frame: ConsoleReport, now: float
    ) -> Step[ConsoleCommand, ConsoleEvent]:
        if isinstance(frame, ButtonFrame):
            event = ButtonPressed(frame.k, frame.action, frame.arg)
            return Step(events=(event,), online=ConsoleOnline())
        assert isinstance(frame, ConsoleStatusFrame)
        self._heartbeat_deadline = now + self._heartbeat_timeout_s
        if frame.last_k < self._last_answered:
            self._last_answered = 0
            return Step(events=(ConsoleRestarted(),), online=ConsoleOnline())
        return Step(online=ConsoleOnline())

    def timer(self, now: float) -> Step[ConsoleCommand, ConsoleEvent]:
        if self._heartbeat_deadline is not None and now >= self._heartbeat_deadline:
            self._heartbeat_deadline = None
            return Step(lost="heartbeat_timeout")
        return Step()

    def deadline(self) -> float | None:
        return self._heartbeat_deadline
