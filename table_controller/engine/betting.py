"""Betting, the latch and the wager guards (§(g)(2), §(h)(2), §(h)(3)).

While betting, chips come and go freely. ``latch`` closes the bets: a
position plays when its initial spot holds chips (§(h)(3)(i)). From then on
every spot of the layout is guarded, and every sensor snapshot is compared
with the **latched** amounts, never only with the snapshot before (docs/rules.md):
a change that arrives in several snapshots, or across one that did not know
a value, is still caught.
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Final

from table_controller.engine.alerts import (
    check_limits,
    open_alerts,
    raise_alert,
    resolve,
    sensor_fault,
)
from table_controller.engine.devices import shoe_fault
from table_controller.engine.domain import (
    INITIAL_SPOTS,
    SPOT_INITIAL,
    SPOT_NAMES,
    SPOT_TIE,
    SPOT_WAR,
    SPOTS_PER_POSITION,
    AlertCode,
    Decision,
    LatchedBy,
    Outcome,
    Phase,
    ResolvedBy,
    Role,
    SpotKind,
    Spots,
    Wager,
    set_bits,
    spot_bit,
)
from table_controller.engine.inputs import SpotsChanged
from table_controller.engine.outputs import ConsoleShow, EventType, SetLights
from table_controller.engine.table import Hand, Table

# docs/rules.md rule 3: what the console shows when the latch leaves no position playing.
NO_POSITION_PLAYS: Final = "no position plays: press VOID_ROUND"


class Guard(Enum):
    """How a spot may change now."""

    FREE = auto()  # no wager in action: the dealer or player may move the chips
    LATCHED = auto()  # a wager in action: it must stay at its latched amount
    OPEN = auto()  # no wager there, and none may be added (past posting)
    LATE = auto()  # a non-playing position after the latch (LATE_WAGER)


def anyone_playing(t: Table) -> bool:
    """A position plays when its initial spot holds chips (§(h)(3)(i))."""
    return bool(t.spots.present & INITIAL_SPOTS)


def latch(t: Table, by: LatchedBy) -> None:
    """§(h)(2): no more bets. A position plays if its initial spot holds chips."""
    spots = t.spots
    rnd = t.round
    rnd.latched = True
    rnd.latched_by = by
    rnd.valued = t.sensors_valued
    if rnd.started is None:
        rnd.started = t.at
    present = spots.present
    fault = spots.fault
    cents = dict(spots.values) if spots.values is not None else {}
    lights = 0
    for p in range(1, t.setup.positions + 1):
        initial = spot_bit(p, SPOT_INITIAL)
        tie = initial + SPOT_TIE
        if (fault >> initial) & 1:
            # docs/rules.md rule 3: a faulty initial-spot sensor at the latch closes the
            # position: the controller cannot vouch for what it holds.
            rnd.closed.append(p)
        elif (present >> initial) & 1:
            tie_wager = Wager(cents.get(tie)) if (present >> tie) & 1 else None
            rnd.hands[p] = Hand(p, Wager(cents.get(initial)), tie_wager)
            lights |= 1 << initial
        elif (present >> tie) & 1:
            # §(h)(3)(iii): a tie wager without an initial wager gets no card: void.
            rnd.void_ties.append((p, cents.get(tie)))
    # §(h)(3): one card to each playing position in order, then the dealer. With no
    # position playing no card is due (docs/rules.md rule 3): a card read is set aside
    # (UNEXPECTED_CARD) and only VOID_ROUND ends the round.
    rnd.plan = [(Role.POSITION, p) for p in rnd.hands]
    if rnd.hands:
        rnd.plan.append((Role.DEALER, None))
    rnd.plan_i = 0
    t.phase = Phase.DEALING
    t.emit(EventType.BETS_CLOSED, {"by": by, "positions": list(rnd.hands)})
    if rnd.hands:
        # docs/rules.md rule 2: the dealer sees the order of the deal, and the layout
        # lights the initial spots in play until the dealer's card is placed.
        order = " ".join([f"P{p}" for p in rnd.hands] + ["D"])
        t.out.append(ConsoleShow(f"deal {order}"))
    else:
        t.out.append(ConsoleShow(NO_POSITION_PLAYS))
    t.out.append(SetLights(lights))
    for p in rnd.closed:
        # docs/rules.md rule 3: critical; CONFIRM (the chips returned) or VOID_ROUND.
        sensor_fault(t, p, SpotKind.INITIAL, critical=True)
        t.out.append(ConsoleShow(f"P{p} closed: sensor fault"))
    limits = t.setup.limits
    if limits.initial is not None or limits.tie is not None:
        for h in rnd.hands.values():
            check_limits(t, h.position, SpotKind.INITIAL, h.initial.amount)
            if h.tie is not None:
                check_limits(t, h.position, SpotKind.TIE, h.tie.amount)
    if rnd.valued:
        for h in rnd.hands.values():
            if h.initial.amount is None:
                unknown_at_latch(t, h.position, SPOT_INITIAL)
            if h.tie is not None and h.tie.amount is None:
                unknown_at_latch(t, h.position, SPOT_TIE)
    if fault & present:
        for h in rnd.hands.values():
            if h.tie is not None and spots.faulty(spot_bit(h.position, SPOT_TIE)):
                # A faulty sensor under a wager now in action: the amount is uncertain.
                sensor_fault(t, h.position, SpotKind.TIE, critical=True)
    # docs/rules.md SHOE_FAULT: a shoe still reporting a fault holds the round now.
    shoe_fault(t)


def unknown_at_latch(t: Table, position: int, spot: int) -> None:
    """docs/rules.md WAGER_UNVERIFIED: a board that reports values did not report this wager's.

    No snapshot can show a latched amount that was never known, so only the
    dealer's CONFIRM resolves it; the wager settles with its amount unknown.
    """
    t.round.differences[spot_bit(position, spot)] = UNKNOWN
    name = SPOT_NAMES[spot]
    raise_alert(
        t,
        AlertCode.WAGER_UNVERIFIED,
        f"P{position} {name.value}: the board reported no value for the wager in action",
        position=position,
        spot=name,
    )


def in_play_lights(t: Table) -> int:
    """The initial spots of the positions still to be dealt their card (docs/rules.md rule 2)."""
    mask = 0
    for h in t.round.hands.values():
        if not h.skipped:
            mask |= 1 << spot_bit(h.position, SPOT_INITIAL)
    return mask


def lights_now(t: Table) -> int:
    """The spots lit now, read from the table alone: what its last ``SetLights`` said. A
    table rebuilt from its journal lights the board with it (a board powered from the
    table PC lost its lights with it): the initial spots in play until the dealer's card
    is placed (rule 2), the war spots of the tie hands while they decide (§(i)(3))."""
    rnd = t.round
    if t.phase is Phase.TIE_DECISION:
        mask = 0
        for h in rnd.hands.values():
            if h.outcome is Outcome.TIE:
                mask |= 1 << spot_bit(h.position, SPOT_WAR)
        return mask
    dealing = t.phase is Phase.DEALING and rnd.latched
    if dealing and not any(c.role is Role.DEALER for c in rnd.cards):
        return in_play_lights(t)
    return 0


def guard(t: Table, position: int, spot: int) -> tuple[Guard, int | None, SpotKind]:
    """How a spot may change now: free, latched (with its amount), open, or late."""
    name = SPOT_NAMES[spot]
    rnd = t.round
    if not rnd.latched:
        return Guard.FREE, None, name
    hand = rnd.hands.get(position)
    if hand is None or hand.skipped:
        if position in rnd.closed or hand is not None:
            # A closed or skipped position's chips are returned (docs/rules.md rule 3).
            return Guard.FREE, None, name
        # §(h)(3)(iii), docs/rules.md: chips on a non-playing position join the next round.
        return Guard.LATE, None, name
    settled = rnd.original_settled
    if spot == SPOT_INITIAL:
        if settled and hand.outcome is not Outcome.TIE:
            return Guard.FREE, None, name
        if hand.decision is Decision.SURRENDER:
            # §(i)(3)(i): half collected, half returned at the decision.
            return Guard.FREE, None, name
        if hand.decision is Decision.WAR and t.setup.rules.war.initial_collected_at_war_decision:
            # §(i)(5): the whole initial wager goes to the chip tray at the decision.
            return Guard.FREE, None, name
        return Guard.LATCHED, hand.initial.amount, name
    if spot == SPOT_TIE:
        if not settled:
            if hand.tie is not None:
                return Guard.LATCHED, hand.tie.amount, name
            return Guard.OPEN, None, name
        if t.phase is Phase.WAR_DEALING and hand.decision is Decision.WAR:
            if hand.war_tie is not None:
                return Guard.LATCHED, hand.war_tie.amount, SpotKind.WAR_TIE
            if t.setup.rules.war_tie_wager_allowed:
                return Guard.OPEN, None, SpotKind.WAR_TIE
        # Settled at the original deal, or the war-tie window of tie_decision.
        return Guard.FREE, None, name
    # The war spot: no wager until the decision; free while deciding (docs/rules.md rule 5).
    if not settled:
        return Guard.OPEN, None, name
    if hand.decision is Decision.WAR and hand.war is not None:
        # docs/rules.md rule 5, §(g)(2): from the WAR press on the war wager is guarded
        # like any wager in action.
        return Guard.LATCHED, hand.war.amount, name
    return Guard.FREE, None, name


def known_amounts(t: Table) -> bool:
    """A wager in action has a known amount: the board reports values (RFID chips)."""
    for h in t.round.hands.values():
        for w in (h.initial, h.tie, h.war, h.war_tie):
            if w is not None and w.amount is not None:
                return True
    return False


# A wager in action whose value is not known (WAGER_UNVERIFIED).
UNKNOWN = "unknown"


def _difference(
    kind: Guard, amount: int | None, present: bool, value: int | None, valued: bool
) -> str | None:
    """How a guarded spot differs from its latched state, None when it does not."""
    if kind is Guard.OPEN:
        return "added" if present else None
    if not present:
        return "removed"
    if amount is None:
        # A presence-only board: present is all it can say. From a board that
        # reports values, a value never known at the latch stays unverified.
        return UNKNOWN if valued else None
    if value is None:
        return UNKNOWN
    if value > amount:
        return f"raised to {value}"
    if value < amount:
        return f"lowered to {value}"
    return None


def on_spots(t: Table, inp: SpotsChanged) -> None:
    """A sensor snapshot: the layout's chips; after the latch, the wagers' guard.

    §(g)(2): once wagers are latched no player may handle, remove or alter a
    wager until it is decided, so each guarded spot is compared with its
    latched state (docs/rules.md "latched amount").
    """
    nbits = t.setup.positions * SPOTS_PER_POSITION
    mask = (1 << nbits) - 1
    present = inp.present & mask if inp.present >= 0 else 0
    fault = inp.fault & mask if inp.fault >= 0 else 0
    values: tuple[tuple[int, int], ...] | None = None
    if inp.values is not None:
        values = tuple(
            sorted(
                {
                    b: cents
                    for b, cents in inp.values
                    if 0 <= b < nbits and (present >> b) & 1 and cents >= 0
                }.items()
            )
        )
    if values is not None:
        t.sensors_valued = True
    prev = t.spots
    new = Spots(present, fault, values)
    if new == prev and not t.sensors_check_due:
        return
    t.spots = new
    new_faults = fault & ~prev.fault
    if not t.round.latched:
        # Betting: chips come and go freely; only a newly faulty sensor is news.
        for b in set_bits(new_faults):
            sensor_fault(t, b // 3 + 1, SPOT_NAMES[b % 3], critical=False)
        if t.sensors_check_due:
            t.sensors_check_due = False  # the board back has shown the layout again
            sensors_back(t)
        return
    # The spots that can differ now from what was last compared: those that
    # changed, those with a difference raised, and all after the board is back.
    check = (prev.present ^ present) | new_faults
    if values != prev.values:
        old = dict(prev.values or ())
        for b, cents in values or ():
            if old.get(b) != cents:
                check |= 1 << b
        for b in old:
            check |= 1 << b
    for b in t.round.differences:
        check |= 1 << b
    if t.sensors_check_due:
        check = mask
    for b in set_bits(check):
        _check_spot(t, prev, b, bool((new_faults >> b) & 1))
    if t.sensors_check_due and (values is not None or not known_amounts(t)):
        # docs/rules.md: the board is back once its first complete snapshot was compared.
        t.sensors_check_due = False
        sensors_back(t)


def sensors_back(t: Table) -> None:
    """DEVICE_ONLINE for the sensor board, resolving its DEVICE_OFFLINE."""
    offline = [
        a for a in t.open_alerts if a.code is AlertCode.DEVICE_OFFLINE and a.device == "sensors"
    ]
    raise_alert(t, AlertCode.DEVICE_ONLINE, "sensors is back", device="sensors")
    # A device alert resolves itself when the device is back (docs/rules.md).
    resolve(t, offline, ResolvedBy.DEVICE_ONLINE)


def _check_spot(t: Table, prev: Spots, bit: int, new_fault: bool) -> None:
    position, spot = bit // 3 + 1, bit % 3
    spots = t.spots
    kind, amount, name = guard(t, position, spot)
    if new_fault:
        # docs/rules.md: SENSOR_FAULT is critical if the spot plays.
        sensor_fault(t, position, name, critical=kind is Guard.LATCHED)
    now = bool((spots.present >> bit) & 1)
    if kind is Guard.FREE:
        return
    rnd = t.round
    if kind is Guard.LATE:
        was = bool((prev.present >> bit) & 1)
        raised = (spots.value(bit) or 0) > (prev.value(bit) or 0)
        if now and (not was or raised) and bit not in rnd.late_warned:
            rnd.late_warned.add(bit)
            raise_alert(
                t,
                AlertCode.LATE_WAGER,
                f"P{position} {name.value}: chips placed after no more bets join the next round",
                position=position,
                spot=name,
            )
        return
    diff = _difference(kind, amount, now, spots.value(bit), rnd.valued)
    before = rnd.differences.get(bit)
    if diff == before:
        # Unchanged since last raised (or confirmed): not raised again (docs/rules.md).
        return
    if diff is None:
        del rnd.differences[bit]
        # docs/rules.md: WAGER_UNVERIFIED resolves itself once the latched amount shows again.
        unverified = open_alerts(t, AlertCode.WAGER_UNVERIFIED, position, name)
        resolve(t, unverified, ResolvedBy.SNAPSHOT)
        return
    rnd.differences[bit] = diff
    if diff == UNKNOWN:
        code = AlertCode.WAGER_UNVERIFIED
        message = f"P{position} {name.value}: the value of the wager in action is no longer known"
    elif diff == "added" or diff.startswith("raised"):
        code = AlertCode.PAST_POSTING
        shown = "chips added" if diff == "added" else f"wager {diff} cents"
        message = f"P{position} {name.value}: {shown} after no more bets"
    else:
        code = AlertCode.WAGER_REMOVED
        shown = "chips removed" if diff == "removed" else f"wager {diff} cents"
        message = f"P{position} {name.value}: {shown} before the wager was settled"
    # Raised again as it changes (docs/rules.md), though the round is held on this spot already:
    # the journal and the floor see every amount it showed, and CONFIRM answers them all.
    raise_alert(t, code, message, position=position, spot=name)


def war_wager_at_press(t: Table, hand: Hand) -> None:
    """§(i)(5): the war wager is the war spot's chips when the dealer presses WAR."""
    bit = spot_bit(hand.position, SPOT_WAR)
    hand.war = Wager(t.spots.value(bit))
    t.round.differences.pop(bit, None)
    if t.round.valued and hand.war.amount is None:
        unknown_at_latch(t, hand.position, SPOT_WAR)
    if t.spots.faulty(bit):
        # docs/rules.md: SENSOR_FAULT is critical when the spot plays; the war spot plays now.
        sensor_fault(t, hand.position, SpotKind.WAR, critical=True)
