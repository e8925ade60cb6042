"""Presses through a journal fault (docs/rules.md ``JOURNAL_FAULT``, docs/devices.md): a
press the table has answered and acted on, sent again by a console that lost the ACK,
hears that answer again, whether the fault begins with it or before it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

from table_controller.engine import (
    ConsolePress,
    ConsoleReply,
    DeviceOffline,
    DeviceOnline,
    Phase,
    Refusal,
    SpotsChanged,
)
from table_controller.engine.inputs import PressesRenumbered
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, fill, session
from tests.service.test_journal_fault_feed import runner_on, up_to_the_deal

T0 = datetime(2025, 1, 1, 12, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _replies(runner: TableRunner) -> list[ConsoleReply]:
    """The console answers the runner has queued, taken off its queue."""
    replies = []
    while not runner.console_out.empty():
        out = runner.console_out.get_nowait()
        if isinstance(out, ConsoleReply):
            replies.append(out)
    return replies


def test_a_press_answered_before_a_fault_gets_its_answer_again_during_it(
    small_disk: Path,
) -> None:
    """A console that lost the ACK sends the press again: it must hear the answer the table
    acted on, not that the press was refused."""
    runner = runner_on(small_disk / "j.sqlite3")
    try:
        card = next(up_to_the_deal(runner))  # NO_MORE_BETS was pressed and answered
        answered = runner.engine.answered_up_to
        press = next(i for i in session(2) if isinstance(i, ConsolePress) and i.k == answered)
        while not runner.console_out.empty():
            runner.console_out.get_nowait()
        filler = fill(small_disk)
        assert not runner.handle(dataclasses.replace(press, at=card.at))
        assert _replies(runner) == [ConsoleReply(press.k, None)]  # its ACK, as the first time
        filler.unlink()
    finally:
        runner.journal.close()


def test_a_press_answered_before_a_fault_gets_its_answer_again_later_in_it(
    small_disk: Path,
) -> None:
    """The same, when the fault began before the press came again: what the fault owes
    (its alert) cannot be journaled either, and the press still hears its first answer."""
    runner = runner_on(small_disk / "j.sqlite3")
    try:
        card = next(up_to_the_deal(runner))  # NO_MORE_BETS was pressed and answered
        answered = runner.engine.answered_up_to
        press = next(i for i in session(2) if isinstance(i, ConsolePress) and i.k == answered)
        filler = fill(small_disk)
        assert not runner.handle(card)  # the fault begins with the card
        while not runner.console_out.empty():
            runner.console_out.get_nowait()
        assert not runner.handle(dataclasses.replace(press, at=card.at))
        assert _replies(runner) == [ConsoleReply(press.k, None)]  # its ACK, as the first time
        filler.unlink()
    finally:
        runner.journal.close()


def _betting(small_disk: Path) -> TableRunner:
    """A table in betting after two presses of the console's first numbering."""
    runner = TableRunner(config(small_disk / "j.sqlite3"), Journal(small_disk / "j.sqlite3"))
    assert runner.handle(DeviceOnline(at(0), "shoe"))
    assert runner.handle(DeviceOnline(at(1), "console"))
    assert runner.handle(DeviceOnline(at(2), "sensors"))
    assert runner.handle(ConsolePress(at(5), 1, "SHUFFLED", None))
    assert runner.handle(ConsolePress(at(6), 2, "DEALER", "D-1"))
    assert runner.handle(SpotsChanged(at(7), 1, 0, ((0, 2500),)))
    assert runner.engine.phase is Phase.BETTING
    _replies(runner)
    return runner


def test_a_console_restarted_during_a_fault_numbers_its_presses_anew(small_disk: Path) -> None:
    """Its press 1 is not the old press 1: refused while the fault lasts, then, once the
    disk is back, its press 2 is taken as the new press it is (NO_MORE_BETS answered on
    the layout now), not given the old press 2's ACK."""
    runner = _betting(small_disk)
    try:
        filler = fill(small_disk)
        assert not runner.handle(PressesRenumbered(at(10)))
        assert not runner.handle(ConsolePress(at(11), 1, "VOID_ROUND", None))
        assert _replies(runner) == [ConsoleReply(1, Refusal.JOURNAL_FAULT)]
        filler.unlink()
        assert runner.handle(ConsolePress(at(12), 2, "NO_MORE_BETS", None))
        assert runner.fault is None
        assert runner.engine.phase is Phase.DEALING  # acted on: the new press
        assert _replies(runner) == [ConsoleReply(2, None)]
    finally:
        runner.journal.close()


def test_what_a_fault_held_back_is_fed_before_the_first_input_after_it(
    small_disk: Path,
) -> None:
    """The board went away during the fault: the first press after it meets a table that
    knows (docs/rules.md rule 2: no latch of a layout no board vouches for)."""
    runner = _betting(small_disk)
    try:
        filler = fill(small_disk)
        assert not runner.handle(DeviceOffline(at(10), "sensors", "unplugged"))
        filler.unlink()
        runner.handle(ConsolePress(at(12), 3, "NO_MORE_BETS", None))
        assert runner.fault is None
        assert _replies(runner) == [ConsoleReply(3, Refusal.DEVICE_OFFLINE)]
        assert runner.engine.phase is Phase.BETTING
    finally:
        runner.journal.close()
