"""Driving a simulator from its stdin: one command a line, one answer a line on stdout.

Shared by ``table-controller sim shoe|console|sensors``, so that a rig, or a
person at a terminal, talks to every simulated device the same way: ``help``
lists the commands, ``quit`` stops, a bad command gets
one ``error …`` line and the simulator goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Awaitable, Callable

QUIT_WORDS = ("quit", "exit")


def say(line: str) -> None:
    """One line on stdout, at once (a rig reads it through a pipe)."""
    print(line, flush=True)


def read_lines(
    loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None], name: str
) -> None:
    """Lines of stdin into ``lines`` (None at the end). A daemon thread: stdin may be a
    file, a pipe or a terminal, and only a plain blocking read serves all three."""

    def pump() -> None:
        with contextlib.suppress(Exception):
            for line in sys.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line.strip())
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=pump, name=f"sim-{name}-stdin", daemon=True).start()


async def obey(
    act: Callable[[list[str]], Awaitable[str]],
    help_text: str,
    lines: asyncio.Queue[str | None],
    stop: asyncio.Event,
) -> None:
    """Act on every line; ``quit`` sets ``stop``. At the end of stdin the simulator goes
    on serving (it may run with stdin closed, driven by its peer alone).

    ``help`` prints ``help_text`` (it is an answer, not an error); a command
    ``act`` refuses with a ``ValueError`` prints ``error <why>``.
    """
    while (line := await lines.get()) is not None:
        words = line.split()
        if not words:
            continue
        if words[0].lower() in QUIT_WORDS:
            stop.set()
            return
        if words[0].lower() in ("help", "?"):
            for text in help_text.splitlines():
                say(text)
            continue
        try:
            say(await act(words))
        except ValueError as exc:
            say(f"error {exc}")
