"""The dealer console's presses (docs/devices.md, docs/rules.md rules 1-5).

Every press gets exactly one answer, ``ACK`` or ``NAK`` with a reason; a
press already answered gets the same answer again, acted on once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import Final

from table_controller.engine.alerts import raise_alert, resolve
from table_controller.engine.betting import anyone_playing, in_play_lights, latch
from table_controller.engine.cards import CARD_INDEX
from table_controller.engine.dealing import card_event, count_card
from table_controller.engine.devices import SHOE_OK
from table_controller.engine.domain import (
    SPOT_WAR,
    AlertCode,
    CardSlot,
    Decision,
    LatchedBy,
    Outcome,
    Phase,
    ResolvedBy,
    Role,
    Source,
    spot_bit,
)
from table_controller.engine.hints import hint
from table_controller.engine.inputs import ConsoleAction, ConsolePress, PressesRenumbered
from table_controller.engine.outputs import ConsoleReply, ConsoleShow, EventType, Refusal, SetLights
from table_controller.engine.rounds import DEVICE_ALERTS, VOIDED_BY_THE_SHUFFLE, void_round
from table_controller.engine.table import CONSOLE_MEMORY, Hand, Shoe, Table
from table_controller.engine.war import decide

# docs/rules.md: CONFIRM resolves every open alert but these: a misread needs the
# card keyed in, a foreign card can only be voided, and the device alerts
# resolve themselves.
NOT_CONFIRMABLE: Final = frozenset({AlertCode.MISREAD, AlertCode.FOREIGN_CARD}) | DEVICE_ALERTS

Press = Callable[[Table, str | None], Refusal | None]


def _position(t: Table, arg: str | None) -> int | None:
    if arg is None:
        return None
    text = arg.strip()
    if not text.isdecimal() or len(text) > 3:
        return None
    p = int(text)
    return p if 1 <= p <= t.setup.positions else None


def press_shuffled(t: Table, arg: str | None) -> Refusal | None:
    # §(h)(1), docs/rules.md rule 1: accepted only between rounds (no wagers latched).
    if t.round.latched:
        return Refusal.NOT_NOW
    if t.round.cards or t.round.discards:
        # The round open holds cards of the old shoe (a new dealer's burn, §(h)(1); a card
        # set aside after the cover card's round, §(h)(4)): recorded with that shoe, in a
        # round of their own, not in the new one's (docs/rules.md §(h)(4)).
        void_round(t, VOIDED_BY_THE_SHUFFLE)
    number = t.shoe.number + 1
    shoe_id = f"S{number}-{t.at.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    # §(h)(1): a burn card before the first round of the shoe.
    t.shoe = Shoe(number=number, id=shoe_id, burns_due=t.setup.rules.burn_new_shoe)
    t.phase = Phase.BETTING
    t.emit(EventType.SHOE_STARTED, {"shoe_id": shoe_id}, table_level=True)
    return None


def press_dealer(t: Table, arg: str | None) -> Refusal | None:
    dealer = (arg or "").strip()
    if not dealer:
        return Refusal.BAD_ARGUMENT
    if t.round.latched:
        return Refusal.NOT_NOW
    if dealer == t.dealer:
        # docs/rules.md rule 1: the dealer already signed in is no new dealer: no burn.
        return None
    t.dealer = dealer
    # §(h)(1): each new dealer discards one burn card before dealing; a flag,
    # so a new shoe and a new dealer before the same deal burn once.
    t.shoe.burns_due = t.setup.rules.burn_new_shoe
    t.emit(EventType.DEALER_CHANGED, {"dealer": dealer}, table_level=True)
    return None


def press_no_more_bets(t: Table, arg: str | None) -> Refusal | None:
    if t.phase is not Phase.BETTING:
        return Refusal.NOT_NOW
    sensors = t.devices["sensors"]
    if sensors.seen and (not sensors.online or t.sensors_check_due):
        # docs/rules.md rule 2: never latch a snapshot the board can no longer vouch for.
        return Refusal.DEVICE_OFFLINE
    if not anyone_playing(t):
        return Refusal.NO_WAGERS
    latch(t, LatchedBy.NO_MORE_BETS)
    return None


def _tied_undecided(t: Table, arg: str | None) -> Hand | Refusal:
    # A decision settles (part of) the initial wager (§(i)(3), §(i)(5)): not while held.
    if t.phase is not Phase.TIE_DECISION or t.held:
        return Refusal.NOT_NOW
    hand = t.round.hand(_position(t, arg))
    if hand is None or hand.outcome is not Outcome.TIE or hand.decision is not None:
        return Refusal.BAD_POSITION
    return hand


def press_surrender(t: Table, arg: str | None) -> Refusal | None:
    hand = _tied_undecided(t, arg)
    if isinstance(hand, Refusal):
        return hand
    decide(t, hand, Decision.SURRENDER)
    return None


def press_war(t: Table, arg: str | None) -> Refusal | None:
    hand = _tied_undecided(t, arg)
    if isinstance(hand, Refusal):
        return hand
    # §(i)(5), docs/rules.md rule 5: the dealer confirms the placement of the war wager.
    if not (t.spots.present >> spot_bit(hand.position, SPOT_WAR)) & 1:
        return Refusal.NO_WAR_WAGER
    decide(t, hand, Decision.WAR)
    return None


def press_card(t: Table, arg: str | None) -> Refusal | None:
    cards = t.round.cards
    index = next((i for i, c in enumerate(cards) if c.pending), None)
    if index is None:
        return Refusal.NOT_NOW
    card = (arg or "").strip().upper()
    if card not in CARD_INDEX:
        return Refusal.BAD_CARD
    old = cards[index]
    slot = CardSlot(old.n, card, old.role, old.position, Source.MANUAL)
    cards[index] = slot
    foreign = count_card(t, card)
    card_event(t, slot)
    misread = [a for a in t.open_alerts if a.code is AlertCode.MISREAD and a.n == slot.n]
    resolve(t, misread, ResolvedBy.CARD)
    if foreign:
        raise_alert(
            t,
            AlertCode.FOREIGN_CARD,
            f"read {slot.n}: {card} seen more than {t.setup.decks} times in this shoe",
            position=slot.position,
            n=slot.n,
        )
    return None


def press_confirm(t: Table, arg: str | None) -> Refusal | None:
    shoe_ok = t.devices["shoe"].status == SHOE_OK
    # docs/rules.md: a SHOE_FAULT is confirmed only once the shoe reports OK again.
    confirmable = [
        a
        for a in t.open_alerts
        if a.code not in NOT_CONFIRMABLE and (a.code is not AlertCode.SHOE_FAULT or shoe_ok)
    ]
    if not confirmable:
        return Refusal.NOT_NOW
    resolve(t, confirmable, ResolvedBy.CONFIRM)
    return None


def press_void(t: Table, arg: str | None) -> Refusal | None:
    rnd = t.round
    round_alerts = any(a.code not in DEVICE_ALERTS for a in t.open_alerts)
    if not (rnd.latched or rnd.cards or rnd.discards or round_alerts):
        return Refusal.NOT_NOW
    void_round(t)
    return None


def press_skip(t: Table, arg: str | None) -> Refusal | None:
    """docs/rules.md rule 3, §(h)(3)(iii): the dealer dealt no card to this position."""
    rnd = t.round
    if t.phase is not Phase.DEALING or rnd.next_due() is None:
        # Only during the original deal, before the dealer's card has been placed.
        return Refusal.NOT_NOW
    hand = rnd.hand(_position(t, arg))
    if hand is None or hand.skipped:
        return Refusal.BAD_POSITION
    hand.skipped = True
    at = rnd.plan.index((Role.POSITION, hand.position))
    del rnd.plan[at]
    # The cards read from its turn on move one place on: the card taken as its
    # card goes to the next playing position, and so on.
    dealt = [i for i, c in enumerate(rnd.cards) if c.role in (Role.POSITION, Role.DEALER)]
    for k, i in enumerate(dealt[at:], start=at):
        old = rnd.cards[i]
        role, position = rnd.plan[k]
        moved = CardSlot(old.n, old.card, role, position, old.source, old.pending)
        rnd.cards[i] = moved
        card_event(t, moved, moved=True)
    t.out.append(SetLights(in_play_lights(t) if rnd.next_due() is not None else 0))
    return None


ACTIONS: Final[dict[ConsoleAction, Press]] = {
    ConsoleAction.SHUFFLED: press_shuffled,
    ConsoleAction.DEALER: press_dealer,
    ConsoleAction.NO_MORE_BETS: press_no_more_bets,
    ConsoleAction.SURRENDER: press_surrender,
    ConsoleAction.WAR: press_war,
    ConsoleAction.CARD: press_card,
    ConsoleAction.CONFIRM: press_confirm,
    ConsoleAction.VOID_ROUND: press_void,
    ConsoleAction.SKIP: press_skip,
}
BY_NAME: Final[dict[str, Press]] = {a.value: press for a, press in ACTIONS.items()}
# docs/devices.md: these buttons carry no argument.
NO_ARGUMENT: Final = frozenset(
    {
        ConsoleAction.SHUFFLED,
        ConsoleAction.NO_MORE_BETS,
        ConsoleAction.CONFIRM,
        ConsoleAction.VOID_ROUND,
    }
)


def on_press(t: Table, inp: ConsolePress) -> None:
    if inp.k <= t.answers_top and inp.k in t.answers:
        # docs/devices.md: a press already answered gets the same answer, once acted on.
        t.out.append(ConsoleReply(inp.k, t.answers[inp.k]))
        return
    if inp.k <= t.answers_floor:
        t.out.append(ConsoleReply(inp.k, Refusal.STALE_PRESS))
        return
    first = len(t.out)
    action = BY_NAME.get(inp.action)
    reason: Refusal | None
    if action is None:
        reason = Refusal.UNKNOWN_ACTION
    elif inp.arg is not None and inp.action in NO_ARGUMENT:
        # docs/devices.md: a button that takes no argument sent one: not pressed as meant.
        reason = Refusal.BAD_ARGUMENT
    else:
        reason = action(t, inp.arg)
    t.out.insert(first, ConsoleReply(inp.k, reason))
    if reason is not None:
        # The dealer is told what would count now, not only that this did not.
        t.out.insert(first + 1, ConsoleShow(hint(t, inp.action, inp.arg, reason)))
    t.answers[inp.k] = reason
    while len(t.answers) > CONSOLE_MEMORY:
        oldest = next(iter(t.answers))
        del t.answers[oldest]
        t.answers_floor = max(t.answers_floor, oldest)
    t.answers_top = max(t.answers_top, inp.k)


def on_renumbered(t: Table, inp: PressesRenumbered) -> None:
    # docs/devices.md: the console's numbering starts again; old answers are forgotten.
    t.answers = {}
    t.answers_floor = 0
    t.answers_top = 0
