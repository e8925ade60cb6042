"""The tie decision and the war deal (§(i)(3), §(i)(5))."""

from __future__ import annotations

from table_controller.engine.alerts import check_limits, raise_alert, sensor_fault
from table_controller.engine.betting import unknown_at_latch, war_wager_at_press
from table_controller.engine.dealing import compare
from table_controller.engine.domain import (
    SPOT_TIE,
    AlertCode,
    Decision,
    Outcome,
    Phase,
    Role,
    SpotKind,
    Wager,
    spot_bit,
)
from table_controller.engine.outputs import EventType, SetLights
from table_controller.engine.rounds import finish_round
from table_controller.engine.table import Hand, Table


def tied_undecided(t: Table) -> list[Hand]:
    return [h for h in t.round.hands.values() if h.outcome is Outcome.TIE and h.decision is None]


def decide(t: Table, hand: Hand, decision: Decision) -> None:
    """§(i)(3): a tied position surrenders or goes to war."""
    hand.decision = decision
    t.emit(EventType.DECISION, {"position": hand.position, "decision": decision.value})
    if decision is Decision.WAR:
        war_wager_at_press(t, hand)
        assert hand.war is not None
        war, initial = hand.war.amount, hand.initial.amount
        if war is not None and initial is not None and war != initial:
            raise_alert(
                t,
                AlertCode.WAR_WAGER_MISMATCH,
                f"P{hand.position} war wager {war} cents, initial wager {initial} cents",
                position=hand.position,
                spot=SpotKind.WAR,
            )
        check_limits(t, hand.position, SpotKind.WAR, war)
    if not tied_undecided(t):
        decisions_done(t)


def decisions_done(t: Table) -> None:
    """Every tie decided: the round ends, or the war deal is planned (§(i)(5)(i))."""
    t.out.append(SetLights(0))
    rnd = t.round
    at_war = [h for h in rnd.hands.values() if h.decision is Decision.WAR]
    if not at_war:
        finish_round(t)
        return
    rules = t.setup.rules
    spots = t.spots
    for h in at_war:
        bit = spot_bit(h.position, SPOT_TIE)
        # The tie spot now guards the war-tie wager (or its absence) afresh.
        rnd.differences.pop(bit, None)
        if rules.war_tie_wager_allowed and (spots.present >> bit) & 1:
            # §(i)(5): a tie wager on the war deal: the tie spot's chips at the last decision.
            amount = spots.value(bit)
            h.war_tie = Wager(amount)
            if rnd.valued and amount is None:
                unknown_at_latch(t, h.position, SPOT_TIE)
            check_limits(t, h.position, SpotKind.WAR_TIE, amount)
            if spots.faulty(bit):
                # docs/rules.md: critical when the spot plays; the war tie wager plays now.
                sensor_fault(t, h.position, SpotKind.WAR_TIE, critical=True)
    # §(i)(5)(i): three burn cards (the profile's), one card per war position
    # in order, the profile's burns before the dealer's card, the dealer's card.
    rnd.plan = [
        *((Role.WAR_BURN, None) for _ in range(rules.burn_before_war)),
        *((Role.WAR_POSITION, h.position) for h in at_war),
        *((Role.WAR_BURN, None) for _ in range(rules.burn_before_dealer_war)),
        (Role.WAR_DEALER, None),
    ]
    rnd.plan_i = 0
    t.phase = Phase.WAR_DEALING


def settle_war(t: Table) -> None:
    """§(i)(5)(ii): compare each war card with the dealer's war card."""
    rnd = t.round
    placed: dict[tuple[Role, int | None], str | None] = {}
    for c in rnd.cards:
        placed.setdefault((c.role, c.position), c.card)
    dealer = placed.get((Role.WAR_DEALER, None))
    for h in rnd.hands.values():
        if h.decision is Decision.WAR:
            h.war_outcome = compare(placed.get((Role.WAR_POSITION, h.position)), dealer)
    finish_round(t)
