"""Presses through a journal fault (docs/rules.md ``JOURNAL_FAULT``, docs/devices.md): a
press the table has answered and acted on, sent again by a console that lost the ACK,
hears that answer again, whether the fault begins with it or before it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from table_controller.engine import ConsolePress, ConsoleReply
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import fill, session
from tests.service.test_journal_fault_feed import runner_on, up_to_the_deal


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
