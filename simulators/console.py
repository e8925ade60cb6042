"""A simulated dealer console that speaks the real console's bytes (docs/devices.md).

A test or the demo presses buttons (``press(action, arg) -> k``) and awaits
the answer to a press (``await answer(k)``). The console records every
``ACK``/``NAK`` and ``SHOW`` it receives, sends ``STATUS`` heartbeats, and can
restart (its numbering starts again at 1).

Unanswered presses are sent again after a reconnect (docs/devices.md), at the first
heartbeat after it rather than at once: a driver opening its port flushes what
arrived while it was opening (pyserial does, for ``socket://`` and ttys alike),
and a press sent in that instant would be lost. A press still unanswered after
``retry_s`` is sent again too, as a console that does not know whether its
press got through would; the game answers a repeat with the same answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from drivers.console.frames import (
    AckFrame,
    Answer,
    ButtonFrame,
    ConsoleAction,
    ConsoleCommand,
    ConsoleStatusFrame,
    NakFrame,
    ShowFrame,
    parse_command,
)
from drivers.lineframe.cards import Card
from drivers.lineframe.codec import LineFrame
from simulators.errors import ConsoleRestartedError as ConsoleRestartedError
from simulators.fields import check_field, check_fits
from simulators.serve import SimulatedLineDevice

DEFAULT_HEARTBEAT_S = 0.5
DEFAULT_RETRY_S = 2.0


class ConsoleSimulator(SimulatedLineDevice[ConsoleCommand]):
    """A dealer console served over a pty or TCP."""

    def __init__(
        self, *, heartbeat_s: float = DEFAULT_HEARTBEAT_S, retry_s: float = DEFAULT_RETRY_S
    ) -> None:
        super().__init__(name="console", parse=parse_command, heartbeat_s=heartbeat_s)
        self.retry_s = retry_s
        self.last_k = 0
        """The number of the last press made since the console (re)started."""
        self.presses: dict[int, ButtonFrame] = {}
        self.answers: dict[int, list[Answer]] = {}
        """Every answer received per press since the last restart, repeats included."""
        self.shows: list[str] = []
        """Every display line received, in order."""
        self.restarts = 0
        self._answer_waiters: dict[int, list[asyncio.Future[Answer]]] = {}
        self._show_waiters: list[tuple[Callable[[str], bool], asyncio.Future[str]]] = []
        self._sent_at: dict[int, float] = {}
        """When each unanswered press last went out (loop time); absent: due now."""

    @property
    def unanswered(self) -> list[int]:
        return sorted(k for k in self.presses if k not in self.answers)

    def press(self, action: ConsoleAction | str, arg: str | int | Card | None = None) -> int:
        """Press a button; returns its number ``k``. Sent now if a controller is connected,
        else at the first heartbeat after one connects.

        An argument that cannot stand as one field of the frame (empty, a comma, ``$``,
        ``*``, a byte that is not printable ASCII), or a press too long for one frame, is
        refused with FrameFieldError and takes no number: no driver would answer it.
        """
        button = ConsoleAction(action)
        text = None if arg is None else check_field(str(arg), f"{button} argument")
        frame = ButtonFrame(self.last_k + 1, button, text)
        check_fits(frame, f"press {frame.k}")
        self.last_k = frame.k
        self.presses[frame.k] = frame
        self._send_press(frame)
        return frame.k

    def _send_press(self, frame: ButtonFrame) -> None:
        if self.send_frame(frame):
            self._sent_at[frame.k] = asyncio.get_running_loop().time()

    async def answer(self, k: int) -> Answer:
        """The first answer to press ``k``, waiting for it if need be."""
        got = self.answers.get(k)
        if got:
            return got[0]
        waiter: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._answer_waiters.setdefault(k, []).append(waiter)
        return await waiter

    def expect_shown(self, match: str | Callable[[str], bool]) -> asyncio.Future[str]:
        """A future of the first display line received from now on that equals ``match``
        (or that ``match`` accepts): listening already when this returns."""
        accept = match if callable(match) else (lambda text: text == match)
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        entry = (accept, waiter)
        self._show_waiters.append(entry)

        def forget(_: asyncio.Future[str]) -> None:
            if entry in self._show_waiters:
                self._show_waiters.remove(entry)

        waiter.add_done_callback(forget)
        return waiter

    async def shown(self, match: str | Callable[[str], bool]) -> str:
        """The first display line received from now on that equals ``match`` (or that
        ``match`` accepts)."""
        return await self.expect_shown(match)

    def restart(self) -> None:
        """The console restarts: numbering starts again, earlier presses and answers are
        forgotten, and it says so at once with ``STATUS,0``."""
        self.restarts += 1
        self.last_k = 0
        self.presses.clear()
        self.answers.clear()
        self._sent_at.clear()
        for waiters in self._answer_waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(ConsoleRestartedError("console restarted"))
        self._answer_waiters.clear()
        self.send_frame(self._status())

    # -- the line ----------------------------------------------------------------------

    def _status(self) -> ConsoleStatusFrame:
        return ConsoleStatusFrame(self.last_k)

    def heartbeat(self) -> LineFrame | None:
        return self._status()

    def on_connect(self) -> None:
        self.send_frame(self._status())
        self._sent_at.clear()  # every unanswered press is due at the next tick

    def tick(self) -> None:
        super().tick()
        now = asyncio.get_running_loop().time()
        for k in self.unanswered:
            if now - self._sent_at.get(k, float("-inf")) >= self.retry_s:
                self._send_press(self.presses[k])

    def on_command(self, command: ConsoleCommand) -> None:
        if isinstance(command, ShowFrame):
            self.shows.append(command.text)
            for accept, waiter in self._show_waiters:
                if not waiter.done() and accept(command.text):
                    waiter.set_result(command.text)
            return
        assert isinstance(command, AckFrame | NakFrame)
        self.answers.setdefault(command.k, []).append(command)
        self._sent_at.pop(command.k, None)
        for answer_waiter in self._answer_waiters.pop(command.k, []):
            if not answer_waiter.done():
                answer_waiter.set_result(command)
