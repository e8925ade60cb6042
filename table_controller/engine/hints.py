"""What the console shows after a refused press: what the dealer can do now.

A ``NAK`` alone tells a dealer only that the press did not count. Each refusal is
followed by one ``SHOW`` line naming the button that would (docs/devices.md: the
console shows every ``SHOW`` line it is sent).
"""

from __future__ import annotations

from typing import Final

from table_controller.engine.betting import NO_POSITION_PLAYS
from table_controller.engine.domain import Outcome, Phase
from table_controller.engine.inputs import ConsoleAction
from table_controller.engine.outputs import Refusal
from table_controller.engine.table import Table

# In the order a round uses them.
BUTTONS: Final = (
    "SHUFFLED",
    "DEALER,<id>",
    "NO_MORE_BETS",
    "WAR,<pos>",
    "SURRENDER,<pos>",
    "SKIP,<pos>",
    "CARD,<card>",
    "CONFIRM",
    "VOID_ROUND",
)
_NO_ARGUMENT: Final = "SHUFFLED, NO_MORE_BETS, CONFIRM and VOID_ROUND take no argument"


def _now(t: Table) -> str:
    """What the round waits for, as a button to press or a card to deal."""
    if t.held:
        codes = ", ".join(sorted({a.code.value for a in t.open_alerts}))
        return f"held by {codes}: CONFIRM, CARD,<card> or VOID_ROUND"
    if t.phase is Phase.SHUFFLE_DUE:
        return "shuffle due: press SHUFFLED"
    if t.phase is Phase.BETTING:
        if t.dealer is None:
            return "betting: press DEALER,<id>, then NO_MORE_BETS"
        return "betting: press NO_MORE_BETS when bets are down"
    if t.phase is Phase.TIE_DECISION:
        tied = sorted(
            h.position
            for h in t.round.hands.values()
            if h.outcome is Outcome.TIE and h.decision is None
        )
        where = " ".join(f"P{p}" for p in tied)
        return f"tie at {where}: press WAR,<pos> or SURRENDER,<pos>"
    if t.round.latched and not t.round.hands:
        # docs/rules.md rule 3: no position plays, so no card is due.
        return NO_POSITION_PLAYS
    return "dealing: deal the next card"


def hint(t: Table, action: str, arg: str | None, reason: Refusal) -> str:
    """The ``SHOW`` line that follows ``NAK,<k>,<reason>`` for ``action``."""
    if reason is Refusal.NOT_NOW:
        if action == ConsoleAction.CONFIRM.value and not t.held:
            return f"nothing to confirm; {_now(t)}"
        return f"{action} not now; {_now(t)}"
    if reason is Refusal.NO_WAR_WAGER:
        return f"no war wager at P{arg}: place it on the war spot, then WAR,{arg}"
    if reason is Refusal.BAD_POSITION:
        return f"P{arg}: not a position that can take {action} now; {_now(t)}"
    if reason is Refusal.BAD_CARD:
        return "card not known: CARD,<rank><suit>, e.g. CARD,QH or CARD,TS"
    if reason is Refusal.UNKNOWN_ACTION:
        return "buttons: " + " ".join(BUTTONS)
    if reason is Refusal.BAD_ARGUMENT:
        return f"DEALER needs an id (DEALER,D-114); {_NO_ARGUMENT}"
    if reason is Refusal.NO_WAGERS:
        return "no initial wager on the layout: bets first, then NO_MORE_BETS"
    if reason is Refusal.STALE_PRESS:
        return "that press is too old to answer: press the button again"
    if reason is Refusal.DEVICE_OFFLINE:
        return "bet sensors offline: wait for them, then NO_MORE_BETS"
    return "JOURNAL FAULT: CALL TECH"
