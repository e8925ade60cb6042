"""Settlement arithmetic and the round record (docs/rules.md "Settlement arithmetic").

Every number comes from the rules profile: odds, the surrender loss and the
war accounting table. A wager's ``net`` is ``amount × net_per_unit`` rounded
down to the cent, i.e. in the house's favour; the only fractional case is the
surrender, where the player gets back half the initial wager rounded down
(§(i)(3)(i)): net = -(amount - amount // 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from typing import Final

from table_controller.engine.domain import Decision, Outcome, Role, SpotKind, TableSetup
from table_controller.engine.records import PositionRecord, RoundRecord, WagerRecord, WagerResult
from table_controller.engine.rules import RulesProfile, WagerSettlement
from table_controller.engine.table import Hand, Round

ZERO: Final = Fraction(0)
MINUS_ONE: Final = Fraction(-1)
# Wager records remembered per way of settling (see ``Pay.made``).
PAY_MEMORY: Final = 4096


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

    result: WagerResult
    npu: Fraction
    odds: str
    # The records already made, by (spot, amount): a record is an immutable
    # value, and a table sees the same few amounts all day.
    made: dict[tuple[SpotKind, int | None], WagerRecord] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    def settle(self, spot: SpotKind, amount: int | None) -> WagerRecord:
        """This wager settled this way: net = amount × net per unit, rounded down."""
        key = (spot, amount)
        record = self.made.get(key)
        if record is None:
            if len(self.made) >= PAY_MEMORY:
                self.made.clear()
            record = WagerRecord(
                spot, amount, self.odds, self.result, self.npu, wager_net(amount, self.npu)
            )
            self.made[key] = record
        return record


def _pay(s: WagerSettlement) -> Pay:
    return Pay(WagerResult(s.result), s.net_per_unit, s.odds)


@dataclass(frozen=True, slots=True)
class Paytable:
    """A profile's settlement table, read once per profile."""

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


_PAYTABLES: dict[int, tuple[RulesProfile, Paytable]] = {}


def paytable(rules: RulesProfile) -> Paytable:
    """The paytable of a profile, made once per profile object.

    Cached by identity: hashing a profile (nested values and fractions) costs
    more than settling a round.
    """
    hit = _PAYTABLES.get(id(rules))
    if hit is not None and hit[0] is rules:
        return hit[1]
    if len(_PAYTABLES) > 64:
        _PAYTABLES.clear()
    table = _paytable(rules)
    _PAYTABLES[id(rules)] = (rules, table)
    return table


def _paytable(rules: RulesProfile) -> Paytable:
    initial_odds = f"{rules.initial_odds}:1"
    tie_odds = f"{rules.tie_odds}:1"
    war = rules.war
    by_outcome = {Outcome.WIN: war.win, Outcome.TIE: war.tie, Outcome.LOSE: war.lose}
    return Paytable(
        # §(i)(1)(ii), §(j)(1): a higher card wins the initial wager at 1:1.
        initial_win=Pay(WagerResult.WIN, Fraction(rules.initial_odds), initial_odds),
        # §(i)(1)(i): a lower card loses the initial and the tie wager.
        initial_lose=Pay(WagerResult.LOSE, MINUS_ONE, initial_odds),
        # §(i)(3)(i): the player surrenders one half of the initial wager.
        surrender=Pay(WagerResult.SURRENDER, -rules.surrender_loss, initial_odds),
        # §(i)(1)(iii), §(j)(2): a tie hand wins the tie wager at 10:1.
        tie_win=Pay(WagerResult.WIN, Fraction(rules.tie_odds), tie_odds),
        tie_lose=Pay(WagerResult.LOSE, MINUS_ONE, tie_odds),
        war_initial={o: _pay(s.initial) for o, s in by_outcome.items()},
        war_war={o: _pay(s.war) for o, s in by_outcome.items()},
        initial_odds=initial_odds,
        tie_odds=tie_odds,
        # The posted war odds are those of a won war (§(j)(3): 2:1 under ny).
        war_odds=war.win.war.odds,
    )


def _void(spot: SpotKind, amount: int | None, odds: str) -> WagerRecord:
    return WagerRecord(spot, amount, odds, WagerResult.VOID, ZERO, None if amount is None else 0)


def settle_hand(pt: Paytable, hand: Hand) -> list[WagerRecord]:
    """The settled wagers of a hand whose deal is complete (initial, tie, war, war_tie)."""
    outcome = hand.outcome
    initial = hand.initial.amount
    if outcome is Outcome.WIN:
        wagers = [pt.initial_win.settle(SpotKind.INITIAL, initial)]
    elif outcome is Outcome.LOSE:
        wagers = [pt.initial_lose.settle(SpotKind.INITIAL, initial)]
    elif hand.decision is Decision.SURRENDER or hand.war_outcome is None:
        # §(i)(3)(i): the player surrendered half the initial wager.
        wagers = [pt.surrender.settle(SpotKind.INITIAL, initial)]
    else:
        # §(i)(5)(ii) and the profile's war accounting.
        wagers = [pt.war_initial[hand.war_outcome].settle(SpotKind.INITIAL, initial)]
    if hand.tie is not None:
        # §(i)(1)(iii): the tie wager wins on a tie of the original deal only.
        pay = pt.tie_win if outcome is Outcome.TIE else pt.tie_lose
        wagers.append(pay.settle(SpotKind.TIE, hand.tie.amount))
    if hand.war is not None and hand.war_outcome is not None:
        wagers.append(pt.war_war[hand.war_outcome].settle(SpotKind.WAR, hand.war.amount))
    if hand.war_tie is not None:
        # §(i)(5)(ii)(c): the tie wager on the war deal wins on an equal war card.
        pay = pt.tie_win if hand.war_outcome is Outcome.TIE else pt.tie_lose
        wagers.append(pay.settle(SpotKind.WAR_TIE, hand.war_tie.amount))
    return wagers


def void_hand(pt: Paytable, hand: Hand) -> list[WagerRecord]:
    """Every latched wager of a hand, voided (a misdeal): net 0, or null when unknown."""
    wagers = [_void(SpotKind.INITIAL, hand.initial.amount, pt.initial_odds)]
    if hand.tie is not None:
        wagers.append(_void(SpotKind.TIE, hand.tie.amount, pt.tie_odds))
    if hand.war is not None:
        wagers.append(_void(SpotKind.WAR, hand.war.amount, pt.war_odds))
    if hand.war_tie is not None:
        wagers.append(_void(SpotKind.WAR_TIE, hand.war_tie.amount, pt.tie_odds))
    return wagers


def void_after_settling(pt: Paytable, hand: Hand) -> list[WagerRecord]:
    """A hand of a round voided once its original deal was settled. §(i)(1)–(2): the
    initial and tie wagers of that deal were collected and paid before any war deal, so
    what it decided stands (a win, a loss, a surrender, a tie wager won on a tie); only
    what the war deal was to decide is void: the initial wager of a tie hand that had not
    surrendered, its war wager and its war-deal tie wager."""
    if hand.outcome is not Outcome.TIE or hand.decision is Decision.SURRENDER:
        return settle_hand(pt, hand)
    wagers = [_void(SpotKind.INITIAL, hand.initial.amount, pt.initial_odds)]
    if hand.tie is not None:
        wagers.append(pt.tie_win.settle(SpotKind.TIE, hand.tie.amount))
    if hand.war is not None:
        wagers.append(_void(SpotKind.WAR, hand.war.amount, pt.war_odds))
    if hand.war_tie is not None:
        wagers.append(_void(SpotKind.WAR_TIE, hand.war_tie.amount, pt.tie_odds))
    return wagers


def total(nets: list[int | None]) -> int | None:
    """The sum of ``nets``, None if any is unknown."""
    sum_ = 0
    for net in nets:
        if net is None:
            return None
        sum_ += net
    return sum_


def build_record(
    setup: TableSetup,
    rnd: Round,
    *,
    round_id: int,
    shoe_id: str | None,
    dealer: str | None,
    ended: datetime,
    void_reason: str | None,
) -> RoundRecord:
    """The record of a finished round (settled, or void with a reason)."""
    pt = paytable(setup.rules)
    void = void_reason is not None
    # The first card dealt in each place is the one the hand plays.
    cards: dict[int | None, str | None] = {}
    war_cards: dict[int | None, str | None] = {}
    dealer_cards: list[str | None] = []
    dealer_war_cards: list[str | None] = []
    for c in rnd.cards:
        role = c.role
        if role is Role.POSITION:
            cards.setdefault(c.position, c.card)
        elif role is Role.DEALER:
            dealer_cards.append(c.card)
        elif role is Role.WAR_POSITION:
            war_cards.setdefault(c.position, c.card)
        elif role is Role.WAR_DEALER:
            dealer_war_cards.append(c.card)
    entries: list[PositionRecord] = []
    for hand in rnd.hands.values():
        p = hand.position
        if hand.skipped:
            # docs/rules.md rule 3, §(h)(3)(iii): a position dealt no card: every wager void.
            wagers = void_hand(pt, hand)
            card = None
        else:
            if not void:
                wagers = settle_hand(pt, hand)
            elif rnd.original_settled:
                wagers = void_after_settling(pt, hand)
            else:
                wagers = void_hand(pt, hand)
            card = cards.get(p)
        entries.append(
            PositionRecord(
                p,
                card,
                hand.outcome,
                hand.decision,
                war_cards.get(p),
                hand.war_outcome,
                tuple(wagers),
                total([w.net for w in wagers]),
            )
        )
    for p, amount in rnd.void_ties:
        # §(h)(3)(iii): a tie wager without an initial wager gets no card: void.
        wager = _void(SpotKind.TIE, amount, pt.tie_odds)
        entries.append(PositionRecord(p, None, None, None, None, None, (wager,), wager.net))
    if rnd.void_ties:
        entries.sort(key=lambda e: e.position)
    return RoundRecord(
        round_id=round_id,
        shoe_id=shoe_id,
        dealer=dealer,
        rules=setup.rules.name.value,
        rules_overrides=setup.overrides,
        started=rnd.started if rnd.started is not None else ended,
        ended=ended,
        void=void,
        void_reason=void_reason,
        cards=tuple(rnd.cards),
        dealer_card=dealer_cards[0] if dealer_cards else None,
        dealer_war_card=dealer_war_cards[0] if dealer_war_cards else None,
        positions=tuple(entries),
        net=total([e.net for e in entries]),
        alerts=tuple(rnd.alert_ids),
        discards=tuple(rnd.discards),
    )
