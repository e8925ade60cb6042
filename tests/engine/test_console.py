"""Console presses: exactly one answer each, the same answer for a repeated press."""

from __future__ import annotations

from table_controller.engine import ConsolePress, ConsoleReply, Phase, PressesRenumbered, Refusal
from table_controller.engine.rules import NY
from table_controller.engine.table import CONSOLE_MEMORY

from .helpers import Table


def _replies(out: list[object]) -> list[ConsoleReply]:
    return [o for o in out if isinstance(o, ConsoleReply)]


def test_a_repeated_press_gets_the_same_answer_and_is_not_acted_on_twice() -> None:
    t = Table.of(NY)
    t.ok("SHUFFLED")
    shoe = t.state.shoe.id
    out = t.feed(ConsolePress(t.at(), t.k, "SHUFFLED", None))
    assert _replies(list(out)) == [ConsoleReply(t.k, None)]
    assert len(t.events("shoe_started")) == 1
    assert t.state.shoe.id == shoe


def test_a_repeated_refused_press_gets_the_same_refusal() -> None:
    t = Table.of(NY)
    assert t.press("NO_MORE_BETS") == "NOT_NOW"
    t.ok("SHUFFLED")
    t.bets({1: (500, None, None)})
    # The same press number again: the remembered answer, not a new decision.
    out = t.feed(ConsolePress(t.at(), 1, "NO_MORE_BETS", None))
    assert _replies(list(out)) == [ConsoleReply(1, Refusal.NOT_NOW)]
    assert t.phase() is Phase.BETTING


def test_console_restart_forgets_the_old_answers() -> None:
    t = Table.of(NY)
    t.ok("SHUFFLED")
    t.feed(PressesRenumbered(t.at()))
    t.bets({1: (500, None, None)})
    out = t.feed(ConsolePress(t.at(), 1, "NO_MORE_BETS", None))
    assert _replies(list(out)) == [ConsoleReply(1, None)]
    assert t.phase() is Phase.DEALING


def test_unknown_action() -> None:
    t = Table.of(NY)
    assert t.press("DANCE") == "UNKNOWN_ACTION"
    assert t.press("shuffled") == "UNKNOWN_ACTION"


def test_dealer_needs_an_id() -> None:
    t = Table.of(NY)
    assert t.press("DEALER") == "BAD_ARGUMENT"
    assert t.press("DEALER", "  ") == "BAD_ARGUMENT"
    assert t.state.dealer is None


def test_the_reply_comes_first_among_the_outputs() -> None:
    t = Table.of(NY)
    t.press("SHUFFLED")
    assert isinstance(t.last[0], ConsoleReply)


def test_answers_are_remembered_for_recent_presses_only() -> None:
    t = Table.of(NY)
    for _ in range(CONSOLE_MEMORY + 5):
        t.press("CONFIRM")
    recent = t.feed(ConsolePress(t.at(), t.k - 3, "SHUFFLED", None))
    assert _replies(list(recent)) == [ConsoleReply(t.k - 3, Refusal.NOT_NOW)]
    stale = t.feed(ConsolePress(t.at(), 2, "SHUFFLED", None))
    assert _replies(list(stale)) == [ConsoleReply(2, Refusal.STALE_PRESS)]
    assert not t.events("shoe_started")


def test_a_press_numbered_below_the_last_but_never_seen_is_acted_on() -> None:
    t = Table.of(NY)
    t.feed(ConsolePress(t.at(), 5, "CONFIRM", None))
    out = t.feed(ConsolePress(t.at(), 4, "SHUFFLED", None))
    assert _replies(list(out)) == [ConsoleReply(4, None)]
    assert len(t.events("shoe_started")) == 1
    again = t.feed(ConsolePress(t.at(), 5, "SHUFFLED", None))
    assert _replies(list(again)) == [ConsoleReply(5, Refusal.NOT_NOW)]
