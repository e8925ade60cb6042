"""A refused press is followed by a SHOW line that tells the dealer what would count now."""

from __future__ import annotations

from table_controller.engine import ConsolePress, ConsoleReply, ConsoleShow, Refusal, TableSetup
from table_controller.engine.hints import BUTTONS, hint
from table_controller.engine.rules import NY
from table_controller.engine.table import Table as EngineTable

from .helpers import Table


def _after(t: Table, action: str, arg: str | None = None) -> tuple[ConsoleReply, str | None]:
    t.k += 1
    out = list(t.feed(ConsolePress(t.at(), t.k, action, arg)))
    reply = next(o for o in out if isinstance(o, ConsoleReply))
    at = out.index(reply)
    shown = out[at + 1] if at + 1 < len(out) else None
    return reply, shown.text if isinstance(shown, ConsoleShow) else None


def test_a_new_table_says_how_to_start_a_round() -> None:
    t = Table.of(NY)
    reply, shown = _after(t, "NO_MORE_BETS")
    assert reply.reason is Refusal.NOT_NOW
    assert shown == "NO_MORE_BETS not now; shuffle due: press SHUFFLED"


def test_betting_without_a_dealer_names_the_dealer_button() -> None:
    t = Table.of(NY)
    t.ok("SHUFFLED")
    _, shown = _after(t, "WAR", "1")
    assert shown is not None
    assert "DEALER,<id>" in shown


def test_an_unknown_button_lists_every_button() -> None:
    _, shown = _after(Table.of(NY), "HELP")
    assert shown == "buttons: " + " ".join(BUTTONS)


def test_an_accepted_press_shows_no_hint() -> None:
    reply, shown = _after(Table.of(NY), "SHUFFLED")
    assert reply.reason is None
    assert shown is None or "not now" not in shown


def test_every_refusal_has_its_own_line() -> None:
    table = EngineTable(TableSetup(NY, 6, 7))
    lines = {hint(table, "WAR", "3", reason) for reason in Refusal}
    assert len(lines) == len(Refusal)
