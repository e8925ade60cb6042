"""The console's link rules without I/O: every press handed on, restarts, watchdog."""

from __future__ import annotations

from drivers.console.frames import ButtonFrame, ConsoleAction, ConsoleStatusFrame
from drivers.console.protocol import (
    ButtonPressed,
    ConsoleOnline,
    ConsoleProtocol,
    ConsoleRestarted,
)


def test_every_press_is_handed_on_repeats_included() -> None:
    p = ConsoleProtocol()
    p.connection_made(0.0)
    first = p.frame_received(ButtonFrame(1, ConsoleAction.WAR, "2"), 0.1)
    assert first.events == (ButtonPressed(1, ConsoleAction.WAR, "2"),)
    assert first.online == ConsoleOnline()
    again = p.frame_received(ButtonFrame(1, ConsoleAction.WAR, "2"), 0.2)
    assert again.events == first.events
    assert ButtonPressed(1, ConsoleAction.WAR, "2").position == 2


def test_status_below_the_last_answer_is_a_restart() -> None:
    p = ConsoleProtocol()
    p.connection_made(0.0)
    p.answered(5)
    assert p.frame_received(ConsoleStatusFrame(5), 0.1).events == ()
    assert p.frame_received(ConsoleStatusFrame(6), 0.2).events == ()
    assert p.frame_received(ConsoleStatusFrame(0), 0.3).events == (ConsoleRestarted(),)
    # Reported once: the numbering now starts again from nothing answered.
    assert p.last_answered == 0
    assert p.frame_received(ConsoleStatusFrame(0), 0.4).events == ()
    p.answered(1)
    assert p.frame_received(ConsoleStatusFrame(1), 0.5).events == ()


def test_a_restarted_controller_still_recognises_a_console_restart() -> None:
    p = ConsoleProtocol(last_answered=12)
    p.connection_made(0.0)
    assert p.frame_received(ConsoleStatusFrame(2), 0.1).events == (ConsoleRestarted(),)


def test_no_heartbeat_for_three_seconds_drops_the_session() -> None:
    p = ConsoleProtocol()
    p.connection_made(10.0)
    assert p.deadline() == 13.0
    p.frame_received(ConsoleStatusFrame(0), 11.0)
    assert p.timer(13.5).lost is None
    assert p.timer(14.0).lost == "heartbeat_timeout"
