"""Settlement arithmetic and the round record (GAME.md "Settlement arithmetic", MQTT.md).

Every number comes from the rules profile: odds, the surrender loss and the
war accounting table. A wager's ``net`` is ``amount × net_per_unit`` rounded
down to the cent, i.e. in the house's favour; the only fractional case is the
surrender, where the player gets back half the initial wager rounded down
(§(i)(3)(i)): net = -(amount - amount // 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any, Final

from table_controller.engine.rules import WagerSettlement
from table_controller.engine.state import (
    CardSlot,
    Decision,
    Hand,
    Outcome,
    Role,
    RoundState,
    SpotKind,
    TableSetup,
)

ZERO: Final = Fraction(0)
_INITIAL: Final = SpotKind.INITIAL.value
_TIE_SPOT: Final = SpotKind.TIE.value
_WAR: Final = SpotKind.WAR.value
_WAR_TIE: Final = SpotKind.WAR_TIE.value
_O_WIN: Final = Outcome.WIN
_O_LOSE: Final = Outcome.LOSE
_O_TIE: Final = Outcome.TIE
_SURRENDER: Final = Decision.SURRENDER
_R_POSITION: Final = Role.POSITION
_R_DEALER: Final = Role.DEALER
_R_WAR_POSITION: Final = Role.WAR_POSITION
_R_WAR_DEALER: Final = Role.WAR_DEALER
MINUS_ONE: Final = Fraction(-1)


def rfc3339(at: datetime) -> str:
    """``at`` in UTC as RFC 3339 with a ``Z`` (microseconds kept when present)."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def npu_json(npu: Fraction) -> int | float:
    """A net per unit as JSON: an int when whole, else a float (-0.5)."""
    return int(npu) if npu.denominator == 1 else float(npu)


def wager_net(amount: int | None, npu: Fraction) -> int | None:
    """``amount × npu`` in whole cents, rounded down (the surrender rounding)."""
    if amount is None:
        return None
    if npu.denominator == 1:
        return amount * npu.numerator
    return math.floor(amount * npu)


@dataclass(frozen=True, slots=True)
class Pay:
    """One way a wager can settle: result, net per unit and the odds shown."""

    result: str
    npu: Fraction
    odds: str
    npu_json: int | float = 0
    # ``npu`` as an int when whole (every case but the surrender): net = amount × it.
    npu_whole: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "npu_json", npu_json(self.npu))
        whole = self.npu.numerator if self.npu.denominator == 1 else None
        object.__setattr__(self, "npu_whole", whole)


def _pay(s: WagerSettlement) -> Pay:
    return Pay(s.result, s.net_per_unit, s.odds)


@dataclass(frozen=True, slots=True)
class Paytable:
    """A profile's settlement table, read once per setup."""

    initial_win: Pay
    initial_lose: Pay
    surrender: Pay
    tie_win: Pay
    tie_lose: Pay
    war_initial: dict[Outcome, Pay]
    war_war: dict[Outcome, Pay]
    initial_odds: str
    tie_odds: str
    war_odds: str
    initial_collected_at_war_decision: bool
    war_tie_wager_allowed: bool


_PAYTABLES: dict[int, tuple[TableSetup, Paytable]] = {}


def paytable(setup: TableSetup) -> Paytable:
    """The paytable of ``setup``'s profile (cached by identity: setups are immutable)."""
    hit = _PAYTABLES.get(id(setup))
    if hit is not None and hit[0] is setup:
        return hit[1]
    rules = setup.rules
    initial_odds = f"{rules.initial_odds}:1"
    tie_odds = f"{rules.tie_odds}:1"
    war = rules.war
    by_outcome = {Outcome.WIN: war.win, Outcome.TIE: war.tie, Outcome.LOSE: war.lose}
    table = Paytable(
        # §(i)(1)(ii), §(j)(1): a higher card wins the initial wager at 1:1.
        initial_win=Pay("win", Fraction(rules.initial_odds), initial_odds),
        # §(i)(1)(i): a lower card loses the initial and the tie wager.
        initial_lose=Pay("lose", MINUS_ONE, initial_odds),
        # §(i)(3)(i): the player surrenders one half of the initial wager.
        surrender=Pay("surrender", -rules.surrender_loss, initial_odds),
        # §(i)(1)(iii), §(j)(2): a tie hand wins the tie wager at 10:1.
        tie_win=Pay("win", Fraction(rules.tie_odds), tie_odds),
        tie_lose=Pay("lose", MINUS_ONE, tie_odds),
        war_initial={o: _pay(s.initial) for o, s in by_outcome.items()},
        war_war={o: _pay(s.war) for o, s in by_outcome.items()},
        initial_odds=initial_odds,
        tie_odds=tie_odds,
        # The posted war odds are those of a won war (§(j)(3): 2:1 under ny).
        war_odds=war.win.war.odds,
        initial_collected_at_war_decision=war.initial_collected_at_war_decision,
        war_tie_wager_allowed=rules.war_tie_wager_allowed,
    )
    if len(_PAYTABLES) > 64:
        _PAYTABLES.clear()
    _PAYTABLES[id(setup)] = (setup, table)
    return table


def _wager(spot: str, amount: int | None, pay: Pay) -> dict[str, Any]:
    # wager_net, inlined with the whole net per unit read once per paytable.
    whole = pay.npu_whole
    if amount is None:
        net = None
    elif whole is not None:
        net = amount * whole
    else:
        net = math.floor(amount * pay.npu)
    return {
        "spot": spot,
        "amount": amount,
        "odds": pay.odds,
        "result": pay.result,
        "net_per_unit": pay.npu_json,
        "net": net,
    }


def _void(spot: str, amount: int | None, odds: str) -> dict[str, Any]:
    return {
        "spot": spot,
        "amount": amount,
        "odds": odds,
        "result": "void",
        "net_per_unit": 0,
        "net": None if amount is None else 0,
    }


def settle_hand(pt: Paytable, hand: Hand) -> list[dict[str, Any]]:
    """The settled wagers of a hand whose deal is complete (initial, tie, war, war_tie)."""
    out: list[dict[str, Any]] = []
    outcome = hand.outcome
    if outcome is _O_WIN:
        out.append(_wager(_INITIAL, hand.initial.amount, pt.initial_win))
    elif outcome is _O_LOSE:
        out.append(_wager(_INITIAL, hand.initial.amount, pt.initial_lose))
    elif hand.decision is _SURRENDER:
        out.append(_wager(_INITIAL, hand.initial.amount, pt.surrender))
    else:
        wo = hand.war_outcome
        assert wo is not None
        out.append(_wager(_INITIAL, hand.initial.amount, pt.war_initial[wo]))
    if hand.tie is not None:
        pay = pt.tie_win if outcome is _O_TIE else pt.tie_lose
        out.append(_wager(_TIE_SPOT, hand.tie.amount, pay))
    if hand.war is not None:
        wo = hand.war_outcome
        assert wo is not None
        out.append(_wager(_WAR, hand.war.amount, pt.war_war[wo]))
    if hand.war_tie is not None:
        # §(i)(5)(ii)(c): the tie wager on the war deal wins on an equal war card.
        pay = pt.tie_win if hand.war_outcome is _O_TIE else pt.tie_lose
        out.append(_wager(_WAR_TIE, hand.war_tie.amount, pay))
    return out


def void_hand(pt: Paytable, hand: Hand) -> list[dict[str, Any]]:
    """Every latched wager of a hand, voided (a misdeal): net 0, or null when unknown."""
    out = [_void(_INITIAL, hand.initial.amount, pt.initial_odds)]
    if hand.tie is not None:
        out.append(_void(_TIE_SPOT, hand.tie.amount, pt.tie_odds))
    if hand.war is not None:
        out.append(_void(_WAR, hand.war.amount, pt.war_odds))
    if hand.war_tie is not None:
        out.append(_void(_WAR_TIE, hand.war_tie.amount, pt.tie_odds))
    return out


def _sum(nets: list[int | None]) -> int | None:
    total = 0
    for n in nets:
        if n is None:
            return None
        total += n
    return total


def card_json(slot: CardSlot) -> dict[str, Any]:
    return {
        "n": slot.n,
        "card": slot.card,
        "role": slot.role._value_,
        "position": slot.position,
        "source": slot.source._value_,
    }


def build_record(
    setup: TableSetup,
    rnd: RoundState,
    *,
    round_id: int,
    shoe_id: str | None,
    dealer: str | None,
    ended: datetime,
    void_reason: str | None,
) -> dict[str, Any]:
    """The ``war-round/1`` body of a finished round (settled, or void with a reason)."""
    pt = paytable(setup)
    void = void_reason is not None
    cards = rnd.cards
    # One pass over the cards: each hand's card and war card, the dealer's
    # cards (the first card dealt in each place).
    hand_cards: dict[int | None, str | None] = {}
    war_cards: dict[int | None, str | None] = {}
    dealer_card: str | None = None
    dealer_war_card: str | None = None
    dealer_seen = dealer_war_seen = False
    card_list: list[dict[str, Any]] = []
    for c in cards:
        role = c.role
        if role is _R_POSITION:
            if c.position not in hand_cards:
                hand_cards[c.position] = c.card
        elif role is _R_DEALER:
            if not dealer_seen:
                dealer_seen = True
                dealer_card = c.card
        elif role is _R_WAR_POSITION:
            if c.position not in war_cards:
                war_cards[c.position] = c.card
        elif role is _R_WAR_DEALER and not dealer_war_seen:
            dealer_war_seen = True
            dealer_war_card = c.card
        # card_json, inlined: a record lists every card of the round.
        card_list.append(
            {
                "n": c.n,
                "card": c.card,
                "role": role._value_,
                "position": c.position,
                "source": c.source._value_,
            }
        )
    entries: list[tuple[int, dict[str, Any]]] = []
    for hand in rnd.hands:
        wagers = void_hand(pt, hand) if void else settle_hand(pt, hand)
        net: int | None = 0
        for w in wagers:
            wager_net_ = w["net"]
            if wager_net_ is None:
                net = None
                break
            net += wager_net_
        outcome = hand.outcome
        decision = hand.decision
        war_outcome = hand.war_outcome
        position = hand.position
        entries.append(
            (
                position,
                {
                    "position": position,
                    "card": hand_cards.get(position),
                    "outcome": None if outcome is None else outcome._value_,
                    "decision": None if decision is None else decision._value_,
                    "war_card": war_cards.get(position),
                    "war_outcome": None if war_outcome is None else war_outcome._value_,
                    "wagers": wagers,
                    "net": net,
                },
            )
        )
    for position, amount in rnd.void_ties:
        # §(h)(3)(iii): a tie wager without an initial wager gets no card: void.
        wager = _void(_TIE_SPOT, amount, pt.tie_odds)
        entries.append(
            (
                position,
                {
                    "position": position,
                    "card": None,
                    "outcome": None,
                    "decision": None,
                    "war_card": None,
                    "war_outcome": None,
                    "wagers": [wager],
                    "net": wager["net"],
                },
            )
        )
    if rnd.void_ties:
        entries.sort(key=lambda e: e[0])
    positions = [e[1] for e in entries]
    started = rnd.started if rnd.started is not None else ended
    return {
        "round_id": round_id,
        "shoe_id": shoe_id,
        "dealer": dealer,
        "rules": setup.rules.name.value,
        "started": rfc3339(started),
        "ended": rfc3339(ended),
        "void": void,
        "void_reason": void_reason,
        "cards": card_list,
        "dealer_card": dealer_card,
        "dealer_war_card": dealer_war_card,
        "positions": positions,
        "net": _sum([p["net"] for p in positions]),
        "alerts": list(rnd.alert_ids),
    }
