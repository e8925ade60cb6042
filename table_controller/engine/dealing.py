"""Reads from the shoe and the original deal (§(h)(1), §(h)(3), §(h)(4), §(i)(1)).

Reads are taken in read-number order: a read whose number is not above the
last one taken is a repeat and is ignored (counted in ``stats``). A card name
the engine cannot parse is as good as a misread.
"""

from __future__ import annotations

from typing import Final

from table_controller.engine.alerts import raise_alert
from table_controller.engine.betting import anyone_playing, latch
from table_controller.engine.cards import CARD_INDEX, CARD_RANK
from table_controller.engine.domain import (
    BURN_ROLES,
    SPOT_WAR,
    AlertCode,
    CardSlot,
    LatchedBy,
    Outcome,
    Phase,
    Role,
    Source,
    spot_bit,
)
from table_controller.engine.inputs import (
    REASON_SHOE_REBOOTED,
    CardRead,
    CoverRead,
    Misread,
    ReadGap,
)
from table_controller.engine.outputs import ConsoleShow, EventType, SetLights
from table_controller.engine.rounds import enter_shuffle_due, finish_round
from table_controller.engine.table import Table

# docs/devices.md: the shoe keeps its last 64 reads, so no gap a driver reports is longer.
MAX_LOST_READS: Final = 64
NO_POSITION: Final = "read with no playing position"


def card_event(t: Table, slot: CardSlot, *, moved: bool = False) -> None:
    data: dict[str, object] = {
        "n": slot.n,
        # §(h)(1): a burn card's rank is revealed to no one at the table.
        "card": None if slot.role in BURN_ROLES else slot.card,
        "role": slot.role,
        "position": slot.position,
        "source": slot.source,
    }
    if moved:
        # docs/rules.md rule 3: a card moved one place on by SKIP, published again.
        data["moved"] = True
    t.emit(EventType.CARD, data)


def compare(player: str | None, dealer: str | None) -> Outcome:
    """§(f): the player's rank against the dealer's; the suit has no effect."""
    p = CARD_RANK[player or ""]
    d = CARD_RANK[dealer or ""]
    return Outcome.WIN if p > d else Outcome.LOSE if p < d else Outcome.TIE


def _repeated(t: Table) -> None:
    t.stats = t.stats._replace(duplicate_reads=t.stats.duplicate_reads + 1)


def _new_read(t: Table, n: int) -> bool:
    if n <= t.last_read_n:
        _repeated(t)
        return False
    t.last_read_n = n
    return True


def on_card(t: Table, inp: CardRead) -> None:
    n = inp.n
    if n <= t.last_read_n:
        _repeated(t)
        return
    t.last_read_n = n
    take_read(t, n, inp.card if inp.card in CARD_INDEX else None)


def on_misread(t: Table, inp: Misread) -> None:
    if _new_read(t, inp.n):
        take_read(t, inp.n, None)


def on_cover(t: Table, inp: CoverRead) -> None:
    if not _new_read(t, inp.n) or t.phase is Phase.SHUFFLE_DUE or t.shoe.cover_seen:
        return
    t.shoe.cover_seen = True
    t.shoe.cover_n = inp.n
    # §(h)(4): the round being dealt completes, then the cards are reshuffled;
    # with no round in progress the reshuffle is due now.
    if not t.round.latched:
        enter_shuffle_due(t)


def on_gap(t: Table, inp: ReadGap) -> None:
    if inp.reason == REASON_SHOE_REBOOTED:
        # The shoe's counter started again (docs/devices.md): the next reads are 1, 2, ...
        t.last_read_n = 0
        if t.round.latched:
            # docs/devices.md: with wagers latched, reads may have been lost in the reboot.
            raise_alert(
                t,
                AlertCode.SHOE_READ_GAP,
                f"the shoe restarted after read {inp.first_missing - 1}: check the layout",
                n=inp.first_missing,
            )
        return
    # docs/rules.md: a gap a resend did not fill is SHOE_READ_GAP, whatever the phase.
    first = max(inp.first_missing, t.last_read_n + 1)
    last = inp.last_missing if inp.last_missing is not None else inp.first_missing
    last = min(last, first + MAX_LOST_READS - 1)
    if last < first:
        return
    lost = f"reads {first}..{last}" if last > first else f"read {first}"
    raise_alert(t, AlertCode.SHOE_READ_GAP, f"{lost} never arrived: check the layout", n=first)
    # Each lost read is a card that left the shoe unseen: it takes its place in
    # the deal as a misread would, so the cards after it are not dealt one
    # place off (a lost burn stays unseen, §(h)(1); a dealt card waits for the
    # dealer's CARD,<card>).
    for n in range(first, last + 1):
        t.last_read_n = n
        take_read(t, n, None)


def count_card(t: Table, card: str) -> bool:
    """Count ``card`` into the shoe's composition; True if it is one copy too many."""
    counts = t.shoe.counts
    i = CARD_INDEX[card]
    counts[i] += 1
    return counts[i] > t.setup.decks


def take_read(t: Table, n: int, card: str | None) -> None:
    """A physical card came out of the shoe as read ``n`` (``card`` None: misread)."""
    phase = t.phase
    if phase is Phase.SHUFFLE_DUE:
        # §(h)(4): the shoe is finished; nothing may be dealt until a new one.
        discard(t, n, card, "read while the shoe is due for shuffling")
        return
    shoe = t.shoe
    rnd = t.round
    shoe.cards_read += 1
    foreign = False
    if card is not None:
        # FOREIGN_CARD: more copies read than the shoe's decks hold.
        i = CARD_INDEX[card]
        shoe.counts[i] += 1
        foreign = shoe.counts[i] > t.setup.decks
    if (
        shoe.burns_due > 0
        and not rnd.deal_started
        and (phase is Phase.BETTING or phase is Phase.DEALING)
    ):
        # §(h)(1): the due burn card is drawn by the next card before the deal.
        shoe.burns_due -= 1
        slot = CardSlot(n, card, Role.BURN, None)
        rnd.cards.append(slot)
        if rnd.started is None:
            rnd.started = t.at
        card_event(t, slot)
    elif phase is Phase.BETTING:
        if not anyone_playing(t):
            discard(t, n, card, NO_POSITION)
        else:
            # No NO_MORE_BETS: the first card of the deal latches the wagers
            # (UK outline: no bet after the first card is dealt).
            latch(t, LatchedBy.FIRST_CARD)
            if t.setup.rules.no_more_bets_required:
                # §(h)(2): the dealer must call no more bets before dealing.
                raise_alert(
                    t,
                    AlertCode.NO_MORE_BETS_MISSING,
                    f"read {n}: the deal began without NO_MORE_BETS",
                    n=n,
                )
            if rnd.hands:
                deal(t, n, card)
            else:
                # docs/rules.md rule 3: the latch left no position playing: no card is due.
                discard(t, n, card, NO_POSITION)
    elif (phase is Phase.DEALING or phase is Phase.WAR_DEALING) and rnd.plan_i < len(rnd.plan):
        deal(t, n, card)
    elif phase is Phase.TIE_DECISION:
        discard(t, n, card, "read during the tie decision")
    elif not rnd.hands:
        # docs/rules.md rule 3: the latch left no position playing: no card is due.
        discard(t, n, card, NO_POSITION)
    else:
        discard(t, n, card, "read after the deal")
    if foreign:
        # A foreign card stays recorded where it was dealt (docs/rules.md): say where.
        cards = rnd.cards
        taken = cards[-1] if cards and cards[-1].n == n else None
        # §(h)(1): a burn card's rank is revealed to no one, not even in an alert.
        # docs/rules.md: a card set aside may be a burn drawn early: no rank either.
        hidden = taken is None or taken.role in BURN_ROLES
        shown = "a card" if taken is None else "a burn card" if hidden else card
        raise_alert(
            t,
            AlertCode.FOREIGN_CARD,
            f"read {n}: {shown} seen more than {t.setup.decks} times in this shoe",
            position=taken.position if taken is not None else None,
            n=n,
        )


def discard(t: Table, n: int, card: str | None, why: str) -> None:
    """A card read when none is due: set aside, dealt to no one (UNEXPECTED_CARD).

    docs/rules.md: it may be a burn card drawn early, so no live feed names its rank
    (§(h)(1)); only the round record holds it.
    """
    t.round.discards.append((n, card))
    t.stats = t.stats._replace(discarded=t.stats.discarded + 1)
    raise_alert(t, AlertCode.UNEXPECTED_CARD, f"read {n}: a card {why}", n=n)


def deal(t: Table, n: int, card: str | None) -> None:
    """Place the card in the next place of the deal (§(h)(3), §(i)(5)(i))."""
    rnd = t.round
    role, position = rnd.plan[rnd.plan_i]
    pending = card is None and role not in BURN_ROLES
    slot = CardSlot(n, card, role, position, Source.SHOE, pending)
    rnd.cards.append(slot)
    rnd.plan_i += 1
    rnd.deal_started = True
    card_event(t, slot)
    if role is Role.DEALER:
        # docs/rules.md rule 2: the spots in play are lit until the dealer's card is placed.
        t.out.append(SetLights(0))
    if pending:
        where = f"P{position}" if position is not None else "the dealer"
        raise_alert(
            t,
            AlertCode.MISREAD,
            f"read {n} for {where} ({role.value}) was not recognised: key in the card",
            position=position,
            n=n,
        )


def settle_original(t: Table) -> None:
    """§(i)(1): compare each position's card with the dealer's; ties go to decision."""
    rnd = t.round
    placed: dict[int | None, str | None] = {}
    dealer: str | None = None
    for c in rnd.cards:
        if c.role is Role.POSITION:
            placed.setdefault(c.position, c.card)
        elif c.role is Role.DEALER and dealer is None:
            dealer = c.card
    tied: list[int] = []
    for hand in rnd.hands.values():
        if hand.skipped:
            continue
        hand.outcome = compare(placed.get(hand.position), dealer)
        if hand.outcome is Outcome.TIE:
            tied.append(hand.position)
    rnd.original_settled = True
    if not tied:
        finish_round(t)
        return
    # §(i)(3): each tie hand chooses to surrender or to go to war.
    t.phase = Phase.TIE_DECISION
    mask = 0
    for p in tied:
        mask |= 1 << spot_bit(p, SPOT_WAR)
    t.out.append(SetLights(mask))
    for p in tied:
        t.out.append(ConsoleShow(f"P{p} TIE: WAR OR SURRENDER"))
