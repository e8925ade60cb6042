"""The round as a state machine: ``transition(state, input) -> (state, outputs)``.

Pure: no I/O, no clock (time comes in each input's ``at``), never raises on
any input. GAME.md is the contract; the New York regulation 9 NYCRR §5324.22
(cited §(h)(1) etc.) is the authority where they differ.

Decisions this module takes where the written rules leave a choice:

- Reads are taken in read-number order: a read whose number is not above the
  last one taken is a repeat and is ignored (counted in ``stats``).
- ``ReadGap`` (a resend that did not fill a gap): ``SHOE_READ_GAP`` (critical)
  in every phase (GAME.md), and each lost read takes its place in the deal
  unseen, as a misread would, so later cards are not dealt one place off.
  ``shoe_rebooted``: the read numbers start again at 1, and with wagers
  latched reads may have been lost (``SHOE_READ_GAP``).
- The war spot of a position that went to war holds a wager in action: chips
  added to it in ``tie_decision`` are allowed (GAME.md), chips taken back are
  ``WAGER_REMOVED`` (§(g)(2)); a faulty sensor under a war or war-tie wager is
  a critical ``SENSOR_FAULT`` as soon as that wager goes into action.
- A press with an argument where its button takes none is refused
  ``BAD_ARGUMENT``; an unknown action ``UNKNOWN_ACTION`` (every press gets an
  answer, DEVICES.md).
- A misread **burn** card raises no ``MISREAD``: §(h)(1) forbids revealing a
  burn card's rank to anyone, so the dealer is not asked to key it in. Its
  rank stays unknown (``null``) in the round record.
- A card read when none is due (``UNEXPECTED_CARD``) is set aside: it is
  dealt to no one and appears in the round's ``discards`` (state) and in the
  alert's message, not among the record's cards.
- ``VOID_ROUND`` with nothing latched, no card taken and no round alert open
  is refused ``NOT_NOW``; with cards or open alerts (a foreign burn card, say)
  it voids the round open, so that the alert can be resolved.
- ``WAR``/``SURRENDER`` are refused ``NOT_NOW`` while the table is held: a
  decision settles (part of) the initial wager (§(i)(3), §(i)(5)).
- ``DEVICE_ONLINE`` (info) is raised when a device comes back after having
  been online before, not at its first connection.
- A round's record lists every card taken while it was open, burn cards
  drawn before a reshuffle between rounds included.
- Console answers are remembered for the last 64 presses (``CONSOLE_MEMORY``);
  a repeated press older than that is answered ``STALE_PRESS`` and not acted on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from table_controller.engine.cards import CARD_INDEX, CARD_RANK
from table_controller.engine.inputs import (
    DEVICE_NAMES,
    REASON_SHOE_REBOOTED,
    CardRead,
    ConsolePress,
    ConsoleRestarted,
    CoverRead,
    DeviceOffline,
    DeviceOnline,
    Input,
    Misread,
    PublishRefused,
    ReadGap,
    ShoeStatus,
    SpotsChanged,
    Tick,
)
from table_controller.engine.outputs import (
    ConsoleReply,
    ConsoleShow,
    EventType,
    NakReason,
    Output,
    RoundRecorded,
    SetLights,
    new_event,
)
from table_controller.engine.settlement import build_record, paytable
from table_controller.engine.state import (
    CONSOLE_MEMORY,
    COPIES_MAX,
    SPOT_INITIAL,
    SPOT_NAMES,
    SPOT_TIE,
    SPOT_WAR,
    Alert,
    AlertBook,
    AlertCode,
    CardSlot,
    ConsoleBook,
    Decision,
    DeviceState,
    Hand,
    Outcome,
    Phase,
    ResolvedBy,
    Role,
    RoundState,
    Severity,
    ShoeState,
    Source,
    SpotKind,
    Spots,
    Stats,
    TableSetup,
    TableState,
    Wager,
    copies_read,
    count_copy,
    spot_bit,
)

# GAME.md's alert table: the severity of each code (SENSOR_FAULT depends on the spot).
SEVERITY: Final[dict[AlertCode, Severity]] = {
    AlertCode.PAST_POSTING: Severity.CRITICAL,
    AlertCode.WAGER_REMOVED: Severity.CRITICAL,
    AlertCode.LATE_WAGER: Severity.WARNING,
    AlertCode.FOREIGN_CARD: Severity.CRITICAL,
    AlertCode.MISREAD: Severity.CRITICAL,
    AlertCode.SHOE_READ_GAP: Severity.CRITICAL,
    AlertCode.UNEXPECTED_CARD: Severity.CRITICAL,
    AlertCode.DEVICE_OFFLINE: Severity.CRITICAL,
    AlertCode.DEVICE_ONLINE: Severity.INFO,
    AlertCode.SENSOR_FAULT: Severity.CRITICAL,
    AlertCode.WAR_WAGER_MISMATCH: Severity.WARNING,
    AlertCode.WAGER_OUT_OF_LIMITS: Severity.WARNING,
    AlertCode.BROKER_REFUSED: Severity.WARNING,
}
# CONFIRM resolves every open alert but these (GAME.md): a misread needs the
# card keyed in, a foreign card can only be voided.
NOT_CONFIRMABLE: Final = frozenset({AlertCode.MISREAD, AlertCode.FOREIGN_CARD})
# MQTT.md: at most one BROKER_REFUSED per topic per minute of input time, as
# the alert about a refusal may itself be refused.
BROKER_REFUSED_INTERVAL: Final = timedelta(seconds=60)

# How the wagers were latched (§(h)(2), or the first card of the deal).
LATCH_NO_MORE_BETS: Final = "no_more_bets"
LATCH_FIRST_CARD: Final = "first_card"

# Enum members as module constants: class attribute access to an enum member
# is a descriptor call, and these are read for every card.
_SHUFFLE_DUE: Final = Phase.SHUFFLE_DUE
_BETTING: Final = Phase.BETTING
_DEALING: Final = Phase.DEALING
_WAR_DEALING: Final = Phase.WAR_DEALING
_BURN: Final = Role.BURN
_WAR_BURN: Final = Role.WAR_BURN
_POSITION: Final = Role.POSITION
_DEALER: Final = Role.DEALER
_WAR_POSITION: Final = Role.WAR_POSITION
_WAR_DEALER: Final = Role.WAR_DEALER
_SHOE: Final = Source.SHOE
_TIE: Final = Outcome.TIE
_WIN: Final = Outcome.WIN
_WAR: Final = Decision.WAR
_SURRENDER: Final = Decision.SURRENDER
_LOSE: Final = Outcome.LOSE

_NEW_ROUND: Final = RoundState()
# The state's named tuples made from their fields in one step, without the
# Python-level ``__new__`` that names them (every field is given, in order).
_tuple_new: Final = tuple.__new__

_FREE: Final = 0  # the dealer or player may move the chips: no wager in action
_LATCHED: Final = 1  # a wager in action: it must not change until settled
_OPEN: Final = 2  # no wager there, and none may be added (past posting)
_LATE: Final = 3  # a non-playing position after the latch (LATE_WAGER)
_KEPT: Final = 4  # a wager in action that chips may be added to but not taken from


class _Ctx:
    """A working copy of the state fields for one transition, and its outputs."""

    __slots__ = (
        "alerts",
        "at",
        "console",
        "dealer",
        "devices",
        "last_read_n",
        "out",
        "phase",
        "round",
        "round_id",
        "seq",
        "setup",
        "shoe",
        "spots",
        "stats",
    )

    def __init__(self, s: TableState, at: datetime) -> None:
        self.setup: TableSetup = s.setup
        self.seq: int = s.seq
        self.phase: Phase = s.phase
        self.round_id: int = s.round_id
        self.dealer: str | None = s.dealer
        self.last_read_n: int = s.last_read_n
        self.shoe: ShoeState = s.shoe
        self.round: RoundState = s.round
        self.spots: Spots = s.spots
        self.alerts: AlertBook = s.alerts
        self.devices: tuple[DeviceState, ...] = s.devices
        self.console: ConsoleBook = s.console
        self.stats: Stats = s.stats
        self.at = at
        self.out: list[Output] = []

    def freeze(self) -> TableState:
        return _tuple_new(
            TableState,
            (
                self.setup,
                self.seq,
                self.phase,
                self.round_id,
                self.dealer,
                self.last_read_n,
                self.shoe,
                self.round,
                self.spots,
                self.alerts,
                self.devices,
                self.console,
                self.stats,
            ),
        )

    def emit(self, type_: EventType, data: dict[str, Any], *, table_level: bool = False) -> None:
        self.seq += 1
        self.out.append(
            new_event(
                self.seq, type_._value_, None if table_level else self.round_id, self.at, data
            )
        )


# ---------------------------------------------------------------- alerts


def _alert_event(ctx: _Ctx, a: Alert, resolved_by: str | None) -> None:
    ctx.emit(
        EventType.ALERT,
        {
            "alert": a.alert,
            "code": a.code.value,
            "severity": a.severity.value,
            "message": a.message,
            "round_id": a.round_id,
            "position": a.position,
            "spot": a.spot,
            "resolved_by": resolved_by,
        },
    )


def _raise(
    ctx: _Ctx,
    code: AlertCode,
    message: str,
    *,
    severity: Severity | None = None,
    position: int | None = None,
    spot: str | None = None,
    n: int | None = None,
    device: Any = None,
) -> None:
    book = ctx.alerts
    number = book.raised + 1
    # Deterministic and unique within the table's history: a counter that the
    # journal replay rebuilds, and the input time.
    alert_id = f"A{number}-{ctx.at.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    sev = severity or SEVERITY[code]
    a = Alert(alert_id, code, sev, message, ctx.round_id, position, spot, n, device)
    critical = sev is Severity.CRITICAL
    ctx.alerts = AlertBook((*book.open, a) if critical else book.open, number, book.refused)
    rnd = ctx.round
    ctx.round = rnd._replace(alert_ids=(*rnd.alert_ids, alert_id))
    counts = dict(ctx.stats.alerts_by_code)
    counts[code.value] = counts.get(code.value, 0) + 1
    ctx.stats = ctx.stats._replace(alerts_by_code=tuple(sorted(counts.items())))
    _alert_event(ctx, a, None)
    if critical:
        where = f" P{position}" if position is not None else ""
        ctx.out.append(ConsoleShow(f"HOLD {code.value}{where}"))


def _resolve(ctx: _Ctx, alerts: list[Alert], by: ResolvedBy) -> None:
    if not alerts:
        return
    gone = {a.alert for a in alerts}
    book = ctx.alerts
    ctx.alerts = AlertBook(
        tuple(a for a in book.open if a.alert not in gone), book.raised, book.refused
    )
    for a in alerts:
        _alert_event(ctx, a, by.value)
    if not ctx.alerts.open:
        ctx.out.append(ConsoleShow("HOLD CLEARED"))


def _open_alert(ctx: _Ctx, code: AlertCode, position: int | None, spot: str | None) -> bool:
    return any(
        a.code is code and a.position == position and a.spot == spot for a in ctx.alerts.open
    )


def _check_limits(ctx: _Ctx, position: int, spot: SpotKind, amount: int | None) -> None:
    """WAGER_OUT_OF_LIMITS when a known amount goes into action outside the table limits."""
    if amount is None:
        return
    limits = ctx.setup.limits
    # config.Limits: the war wager uses the initial limits, war_tie the tie limits.
    pair = limits.initial if spot in (SpotKind.INITIAL, SpotKind.WAR) else limits.tie
    if pair is None or pair[0] <= amount <= pair[1]:
        return
    _raise(
        ctx,
        AlertCode.WAGER_OUT_OF_LIMITS,
        f"P{position} {spot.value} wager {amount} cents outside the limits {pair[0]}..{pair[1]}",
        position=position,
        spot=spot.value,
    )


# ---------------------------------------------------------------- shoe and cards


def _card_event(ctx: _Ctx, slot: CardSlot) -> None:
    ctx.emit(
        EventType.CARD,
        {
            "n": slot.n,
            # §(h)(1): a burn card's rank is revealed to no one at the table.
            "card": None if slot.role is _BURN or slot.role is _WAR_BURN else slot.card,
            "role": slot.role._value_,
            "position": slot.position,
            "source": slot.source._value_,
        },
    )


def _count_card(ctx: _Ctx, card: str) -> bool:
    """Count ``card`` into the shoe's composition; True if it is one copy too many."""
    shoe = ctx.shoe
    i = CARD_INDEX[card]
    counts = count_copy(shoe.counts, i)
    ctx.shoe = shoe._replace(counts=counts)
    return copies_read(counts, i) > ctx.setup.decks


def _discard(ctx: _Ctx, n: int, card: str | None, why: str) -> None:
    """A card read when none is due: set aside, dealt to no one (UNEXPECTED_CARD)."""
    rnd = ctx.round
    ctx.round = rnd._replace(discards=(*rnd.discards, (n, card)))
    ctx.stats = ctx.stats._replace(discarded=ctx.stats.discarded + 1)
    shown = card if card is not None else "an unreadable card"
    _raise(ctx, AlertCode.UNEXPECTED_CARD, f"read {n}: {shown} {why}", n=n)


# The initial spot of every position on the board: bits 0, 3, 6, ...
_INITIAL_SPOTS: Final = sum(1 << (3 * i) for i in range(10))


def _anyone_playing(ctx: _Ctx) -> bool:
    """A position plays when its initial spot holds chips (§(h)(3)(i))."""
    return bool(ctx.spots.present & _INITIAL_SPOTS)


def _take_read(ctx: _Ctx, n: int, card: str | None) -> None:
    """A physical card came out of the shoe as read ``n`` (``card`` None: misread)."""
    phase = ctx.phase
    if phase is _SHUFFLE_DUE:
        # §(h)(4): the shoe is finished; nothing may be dealt until a new one.
        _discard(ctx, n, card, "read while the shoe is due for shuffling")
        return
    shoe = ctx.shoe
    rnd = ctx.round
    # One new shoe value per read (this is the hot path): composition, count, burn.
    counts = shoe.counts
    foreign = False
    if card is not None:
        # count_copy and copies_read, inlined: one byte of ``counts`` per card.
        shift = 8 * CARD_INDEX[card]
        copies = (counts >> shift) & COPIES_MAX
        if copies < COPIES_MAX:
            copies += 1
            counts += 1 << shift
        foreign = copies > ctx.setup.decks
    burn = not rnd.deal_started and shoe.burns_due > 0 and (phase is _BETTING or phase is _DEALING)
    ctx.shoe = _tuple_new(
        ShoeState,
        (
            shoe.number,
            shoe.id,
            counts,
            shoe.cards_read + 1,
            shoe.cover_seen,
            shoe.cover_n,
            shoe.burns_due - 1 if burn else shoe.burns_due,
        ),
    )
    if burn:
        # §(h)(1): the due burn card is drawn by the next card before the deal.
        slot = CardSlot(n, card, _BURN, None, _SHOE)
        ctx.round = rnd._replace(
            cards=(*rnd.cards, slot),
            started=rnd.started if rnd.started is not None else ctx.at,
        )
        _card_event(ctx, slot)
    elif phase is _BETTING:
        if not _anyone_playing(ctx):
            _discard(ctx, n, card, "read with no playing position")
        else:
            # No NO_MORE_BETS: the first card of the deal latches the wagers
            # (UK outline: no bet after the first card is dealt).
            _latch(ctx, LATCH_FIRST_CARD)
            _deal(ctx, n, card)
    elif (phase is _DEALING or phase is _WAR_DEALING) and rnd.plan_i < len(rnd.plan):
        _deal(ctx, n, card)
    else:
        why = "read after the deal"
        if phase is Phase.TIE_DECISION:
            why = "read during the tie decision"
        _discard(ctx, n, card, why)
    if foreign:
        # A foreign card stays recorded where it was dealt (GAME.md): say where.
        cards = ctx.round.cards
        taken = cards[-1] if cards and cards[-1].n == n else None
        position = taken.position if taken is not None else None
        # §(h)(1): a burn card's rank is revealed to no one, not even in an alert.
        hidden = taken is not None and (taken.role is _BURN or taken.role is _WAR_BURN)
        shown = "a burn card" if hidden else card
        _raise(
            ctx,
            AlertCode.FOREIGN_CARD,
            f"read {n}: {shown} seen more than {ctx.setup.decks} times in this shoe",
            position=position,
            n=n,
        )
    _advance(ctx)


def _deal(ctx: _Ctx, n: int, card: str | None) -> None:
    """Place the card in the next slot of the deal (§(h)(3), §(i)(5)(i))."""
    rnd = ctx.round
    plan_i = rnd.plan_i
    role, position = rnd.plan[plan_i]
    pending = card is None and role is not _BURN and role is not _WAR_BURN
    slot = _tuple_new(CardSlot, (n, card, role, position, _SHOE, pending))
    ctx.round = _tuple_new(
        RoundState,
        (
            rnd.latched,
            rnd.latched_by,
            rnd.started,
            rnd.hands,
            rnd.void_ties,
            (*rnd.cards, slot),
            rnd.plan,
            plan_i + 1,
            True,
            rnd.original_settled,
            rnd.alert_ids,
            rnd.discards,
            rnd.late_warned,
        ),
    )
    _card_event(ctx, slot)
    if pending:
        where = f"P{position}" if position is not None else "the dealer"
        _raise(
            ctx,
            AlertCode.MISREAD,
            f"read {n} for {where} ({role.value}) was not recognised: key in the card",
            position=position,
            n=n,
        )


# DEVICES.md: the shoe keeps its last 64 reads, so no gap a driver reports is longer.
MAX_LOST_READS = 64


def _on_card(ctx: _Ctx, inp: CardRead) -> None:
    if inp.n <= ctx.last_read_n:
        ctx.stats = ctx.stats._replace(duplicate_reads=ctx.stats.duplicate_reads + 1)
        return
    ctx.last_read_n = inp.n
    # A card name the engine cannot parse is as good as a misread.
    _take_read(ctx, inp.n, inp.card if inp.card in CARD_INDEX else None)


def _on_misread(ctx: _Ctx, inp: Misread) -> None:
    if inp.n <= ctx.last_read_n:
        ctx.stats = ctx.stats._replace(duplicate_reads=ctx.stats.duplicate_reads + 1)
        return
    ctx.last_read_n = inp.n
    _take_read(ctx, inp.n, None)


def _on_cover(ctx: _Ctx, inp: CoverRead) -> None:
    if inp.n <= ctx.last_read_n:
        ctx.stats = ctx.stats._replace(duplicate_reads=ctx.stats.duplicate_reads + 1)
        return
    ctx.last_read_n = inp.n
    if ctx.phase is Phase.SHUFFLE_DUE or ctx.shoe.cover_seen:
        return
    ctx.shoe = ctx.shoe._replace(cover_seen=True, cover_n=inp.n)
    # §(h)(4): the round being dealt completes, then the cards are reshuffled;
    # with no round in progress the reshuffle is due now.
    if not ctx.round.latched:
        _enter_shuffle_due(ctx)


def _on_gap(ctx: _Ctx, inp: ReadGap) -> None:
    if inp.reason == REASON_SHOE_REBOOTED:
        # The shoe's counter started again (DEVICES.md): the next reads are 1, 2, ...
        ctx.last_read_n = 0
        if ctx.round.latched:
            # DEVICES.md: with wagers latched, reads may have been lost in the reboot.
            _raise(
                ctx,
                AlertCode.SHOE_READ_GAP,
                f"the shoe restarted after read {inp.first_missing - 1}: check the layout",
                n=inp.first_missing,
            )
        return
    # GAME.md: a gap a resend did not fill is SHOE_READ_GAP, whatever the phase.
    first = max(inp.first_missing, ctx.last_read_n + 1)
    last = inp.last_missing if inp.last_missing is not None else inp.first_missing
    last = min(last, first + MAX_LOST_READS - 1)
    if last < first:
        return
    _raise(
        ctx,
        AlertCode.SHOE_READ_GAP,
        f"reads {first}..{last} never arrived: check the layout"
        if last > first
        else f"read {first} never arrived: check the layout",
        n=first,
    )
    # Each lost read is a card that left the shoe unseen: it takes its place in
    # the deal as a misread would, so the cards after it are not dealt one
    # place off (a lost burn stays unseen, §(h)(1); a dealt card waits for the
    # dealer's CARD,<card>).
    for n in range(first, last + 1):
        ctx.last_read_n = n
        _take_read(ctx, n, None)


def _enter_shuffle_due(ctx: _Ctx) -> None:
    ctx.phase = Phase.SHUFFLE_DUE
    ctx.emit(EventType.RESHUFFLE_DUE, {})
    ctx.out.append(ConsoleShow("SHUFFLE DUE"))


# ---------------------------------------------------------------- the round


def _latch(ctx: _Ctx, by: str) -> None:
    """§(h)(2): no more bets. A position plays if its initial spot holds chips."""
    spots = ctx.spots
    present = spots.present
    cents = dict(spots.values) if spots.values is not None else {}
    hands: list[Hand] = []
    void_ties: list[tuple[int, int | None]] = []
    # §(h)(3): one card to each playing position in order, then the dealer.
    deal: list[tuple[Role, int | None]] = []
    for p in range(1, ctx.setup.positions + 1):
        b = (p - 1) * 3  # the initial spot's bit; the tie spot's is b + 1
        tie_present = (present >> (b + 1)) & 1
        if (present >> b) & 1:
            # Hand(p, Wager(initial), tie) and Wager(tie), from their fields in order.
            tie = _tuple_new(Wager, (cents.get(b + 1),)) if tie_present else None
            initial = _tuple_new(Wager, (cents.get(b),))
            hands.append(_tuple_new(Hand, (p, initial, tie, None, None, None, None, None)))
            deal.append((_POSITION, p))
        elif tie_present:
            # §(h)(3)(iii): a tie wager without an initial wager gets no card: void.
            void_ties.append((p, cents.get(b + 1)))
    rnd = ctx.round
    deal.append((_DEALER, None))
    plan = tuple(deal)
    ctx.round = _tuple_new(
        RoundState,
        (
            True,
            by,
            rnd.started if rnd.started is not None else ctx.at,
            tuple(hands),
            tuple(void_ties),
            rnd.cards,
            plan,
            0,
            rnd.deal_started,
            rnd.original_settled,
            rnd.alert_ids,
            rnd.discards,
            rnd.late_warned,
        ),
    )
    ctx.phase = Phase.DEALING
    ctx.emit(EventType.BETS_CLOSED, {"by": by, "positions": [h.position for h in hands]})
    limits = ctx.setup.limits
    if limits.initial is not None or limits.tie is not None:
        for h in hands:
            _check_limits(ctx, h.position, SpotKind.INITIAL, h.initial.amount)
            if h.tie is not None:
                _check_limits(ctx, h.position, SpotKind.TIE, h.tie.amount)
    # A faulty sensor under a wager now in action: the amount is uncertain.
    for h in hands if spots.fault & present else ():
        for spot in (SPOT_INITIAL, SPOT_TIE):
            bit = spot_bit(h.position, spot)
            if (spots.fault >> bit) & 1 and (present >> bit) & 1:
                _sensor_fault(ctx, h.position, SPOT_NAMES[spot], critical=True)


def _advance(ctx: _Ctx) -> None:
    """Settle whatever is complete, unless held (GAME.md: never settle on uncertain data)."""
    if ctx.alerts.open:
        return
    rnd = ctx.round
    if not rnd.latched or rnd.plan_i < len(rnd.plan):
        return
    for c in rnd.cards:
        if c.pending:
            return
    if ctx.phase is _DEALING:
        _settle_original(ctx)
    elif ctx.phase is _WAR_DEALING:
        _settle_war(ctx)


def _compare(player: str | None, dealer: str | None) -> Outcome:
    p = CARD_RANK[player or ""]
    d = CARD_RANK[dealer or ""]
    return _WIN if p > d else _LOSE if p < d else _TIE


def _settle_original(ctx: _Ctx) -> None:
    """§(i)(1): compare each position's card with the dealer's; ties go to decision."""
    rnd = ctx.round
    player_cards: dict[int | None, str | None] = {}
    dealer: str | None = None
    for c in rnd.cards:
        if c.role is _POSITION:
            player_cards[c.position] = c.card
        elif c.role is _DEALER:
            dealer = c.card
    hands: list[Hand] = []
    tied: list[int] = []
    ranks = CARD_RANK
    for position, initial, tie, war, war_tie, _, decision, war_outcome in rnd.hands:
        # _compare, inlined: the player's rank against the dealer's (§(f)).
        p = ranks[player_cards.get(position) or ""]
        d = ranks[dealer or ""]
        outcome = _WIN if p > d else _LOSE if p < d else _TIE
        hands.append(
            _tuple_new(Hand, (position, initial, tie, war, war_tie, outcome, decision, war_outcome))
        )
        if outcome is _TIE:
            tied.append(position)
    ctx.round = _tuple_new(
        RoundState,
        (
            rnd.latched,
            rnd.latched_by,
            rnd.started,
            tuple(hands),
            rnd.void_ties,
            rnd.cards,
            rnd.plan,
            rnd.plan_i,
            rnd.deal_started,
            True,
            rnd.alert_ids,
            rnd.discards,
            rnd.late_warned,
        ),
    )
    if not tied:
        _finish_round(ctx)
        return
    # §(i)(3): each tie hand chooses to surrender or to go to war.
    ctx.phase = Phase.TIE_DECISION
    mask = 0
    for p in tied:
        mask |= 1 << spot_bit(p, SPOT_WAR)
    ctx.out.append(SetLights(mask))
    for p in tied:
        ctx.out.append(ConsoleShow(f"P{p} TIE: WAR OR SURRENDER"))


def _decide(ctx: _Ctx, hand: Hand, decision: Decision) -> None:
    war_amount: int | None = None
    if decision is Decision.WAR:
        # §(i)(5): the war wager is the war spot's chips when the dealer confirms it.
        war_amount = ctx.spots.value(spot_bit(hand.position, SPOT_WAR))
        new = hand._replace(decision=decision, war=Wager(war_amount))
    else:
        new = hand._replace(decision=decision)
    rnd = ctx.round
    ctx.round = rnd._replace(
        hands=tuple(new if h.position == hand.position else h for h in rnd.hands)
    )
    ctx.emit(EventType.DECISION, {"position": hand.position, "decision": decision.value})
    if decision is Decision.WAR:
        # GAME.md: SENSOR_FAULT is critical when the spot plays; the war spot plays now.
        if ctx.spots.faulty(spot_bit(hand.position, SPOT_WAR)):
            _sensor_fault(ctx, hand.position, SpotKind.WAR, critical=True)
        initial = hand.initial.amount
        if war_amount is not None and initial is not None and war_amount != initial:
            _raise(
                ctx,
                AlertCode.WAR_WAGER_MISMATCH,
                f"P{hand.position} war wager {war_amount} cents, initial wager {initial} cents",
                position=hand.position,
                spot=SpotKind.WAR.value,
            )
        _check_limits(ctx, hand.position, SpotKind.WAR, war_amount)
    if all(h.decision is not None for h in ctx.round.hands if h.outcome is Outcome.TIE):
        _decisions_done(ctx)


def _decisions_done(ctx: _Ctx) -> None:
    ctx.out.append(SetLights(0))
    rnd = ctx.round
    at_war = [h for h in rnd.hands if h.decision is Decision.WAR]
    if not at_war:
        _finish_round(ctx)
        return
    rules = ctx.setup.rules
    hands = rnd.hands
    if rules.war_tie_wager_allowed:
        # §(i)(5): a tie wager on the war deal: the tie spot's chips at the last decision.
        spots = ctx.spots
        updated: list[Hand] = []
        for h in hands:
            bit = spot_bit(h.position, SPOT_TIE)
            if h.decision is Decision.WAR and (spots.present >> bit) & 1:
                amount = spots.value(bit)
                h = h._replace(war_tie=Wager(amount))
                _check_limits(ctx, h.position, SpotKind.WAR_TIE, amount)
                if spots.faulty(bit):
                    # GAME.md: critical when the spot plays; the war tie wager plays now.
                    _sensor_fault(ctx, h.position, SpotKind.WAR_TIE, critical=True)
            updated.append(h)
        hands = tuple(updated)
    # §(i)(5)(i): three burn cards (the profile's), one card per war position
    # in order, the profile's burns before the dealer's card, the dealer's card.
    plan = (
        *((Role.WAR_BURN, None) for _ in range(rules.burn_before_war)),
        *((Role.WAR_POSITION, h.position) for h in at_war),
        *((Role.WAR_BURN, None) for _ in range(rules.burn_before_dealer_war)),
        (Role.WAR_DEALER, None),
    )
    ctx.round = ctx.round._replace(hands=hands, plan=plan, plan_i=0)
    ctx.phase = Phase.WAR_DEALING


def _settle_war(ctx: _Ctx) -> None:
    """§(i)(5)(ii): compare each war card with the dealer's war card."""
    rnd = ctx.round
    # One pass over the cards (card_of for each): the first card in each place.
    war_cards: dict[int | None, str | None] = {}
    dealer: str | None = None
    dealer_seen = False
    for c in rnd.cards:
        if c.role is _WAR_POSITION:
            if c.position not in war_cards:
                war_cards[c.position] = c.card
        elif c.role is _WAR_DEALER and c.position is None and not dealer_seen:
            dealer_seen = True
            dealer = c.card
    hands = tuple(
        h._replace(war_outcome=_compare(war_cards.get(h.position), dealer))
        if h.decision is _WAR
        else h
        for h in rnd.hands
    )
    ctx.round = rnd._replace(hands=hands)
    _finish_round(ctx)


def _finish_round(ctx: _Ctx) -> None:
    """Round end: record, event, stats; the next round opens (or the shuffle is due)."""
    rnd = ctx.round
    record = build_record(
        ctx.setup,
        rnd,
        round_id=ctx.round_id,
        shoe_id=ctx.shoe.id,
        dealer=ctx.dealer,
        ended=ctx.at,
        void_reason=None,
    )
    ctx.out.append(RoundRecorded(ctx.round_id, record))
    ctx.emit(EventType.ROUND_SETTLED, {"net": record["net"]})
    st = ctx.stats
    drop, win = st.drop, st.win
    if drop is not None and win is not None:
        net = record["net"]
        if net is None:
            drop = win = None
        else:
            # A known round net means every amount of the round is known. A void
            # tie wager (no initial wager, §(h)(3)(iii)) was never in action.
            for p in record["positions"]:
                for w in p["wagers"]:
                    if w["result"] != "void":
                        drop += w["amount"]
            win -= net
    ties = wars = surrenders = 0
    for h in rnd.hands:
        if h.outcome is _TIE:
            ties += 1
            if h.decision is _WAR:
                wars += 1
            elif h.decision is _SURRENDER:
                surrenders += 1
    ctx.stats = _tuple_new(
        Stats,
        (
            st.rounds + 1,
            st.ties + ties,
            st.wars + wars,
            st.surrenders + surrenders,
            st.voids,
            st.alerts_by_code,
            drop,
            win,
            st.first_started if st.first_started is not None else rnd.started,
            ctx.at,
            st.duplicate_reads,
            st.discarded,
        ),
    )
    _next_round(ctx)


def _next_round(ctx: _Ctx) -> None:
    ctx.round_id += 1
    ctx.round = _NEW_ROUND
    if ctx.phase is _SHUFFLE_DUE:
        # A round voided while the shuffle is due: it stays due.
        return
    if ctx.shoe.cover_seen:
        # §(h)(4): the round that met the cover card is complete: reshuffle.
        _enter_shuffle_due(ctx)
    else:
        ctx.phase = _BETTING


def _void(ctx: _Ctx) -> None:
    """A misdeal: every latched wager is void, the record says so, a new round opens."""
    round_alerts = [a for a in ctx.alerts.open if a.code is not AlertCode.DEVICE_OFFLINE]
    _resolve(ctx, round_alerts, ResolvedBy.VOID_ROUND)
    if ctx.phase is Phase.TIE_DECISION:
        ctx.out.append(SetLights(0))
    codes = sorted({a.code.value for a in round_alerts})
    reason = "voided by the dealer" + (f" ({', '.join(codes)})" if codes else "")
    record = build_record(
        ctx.setup,
        ctx.round,
        round_id=ctx.round_id,
        shoe_id=ctx.shoe.id,
        dealer=ctx.dealer,
        ended=ctx.at,
        void_reason=reason,
    )
    ctx.out.append(RoundRecorded(ctx.round_id, record))
    ctx.emit(EventType.ROUND_VOIDED, {"reason": reason})
    ctx.stats = ctx.stats._replace(voids=ctx.stats.voids + 1)
    _next_round(ctx)


# ---------------------------------------------------------------- sensors


def _guard(ctx: _Ctx, position: int, spot: int) -> tuple[int, int | None, SpotKind]:
    """How a spot may change now: free, latched (with its amount), open, or late."""
    name = SPOT_NAMES[spot]
    rnd = ctx.round
    if not rnd.latched:
        return _FREE, None, name
    hand = rnd.hand(position)
    if hand is None:
        # §(h)(3)(iii), GAME.md: chips on a non-playing position join the next round.
        return _LATE, None, name
    settled = rnd.original_settled
    phase = ctx.phase
    if spot == SPOT_INITIAL:
        if settled and hand.outcome is not Outcome.TIE:
            return _FREE, None, name
        if hand.decision is Decision.SURRENDER:
            # §(i)(3)(i): half collected, half returned at the decision.
            return _FREE, None, name
        if hand.decision is Decision.WAR and paytable(ctx.setup).initial_collected_at_war_decision:
            # §(i)(5): the whole initial wager goes to the chip tray at the decision.
            return _FREE, None, name
        return _LATCHED, hand.initial.amount, name
    if spot == SPOT_TIE:
        if not settled:
            if hand.tie is not None:
                return _LATCHED, hand.tie.amount, name
            return _OPEN, None, name
        if phase is Phase.WAR_DEALING and hand.decision is Decision.WAR:
            if hand.war_tie is not None:
                return _LATCHED, hand.war_tie.amount, SpotKind.WAR_TIE
            if ctx.setup.rules.war_tie_wager_allowed:
                return _OPEN, None, SpotKind.WAR_TIE
        # Settled at the original deal, or the war-tie window of tie_decision.
        return _FREE, None, name
    # The war spot: no wager until the decision; free while deciding (GAME.md).
    if not settled:
        return _OPEN, None, name
    if hand.decision is Decision.WAR and hand.war is not None:
        if phase is Phase.WAR_DEALING:
            return _LATCHED, hand.war.amount, name
        # tie_decision after the WAR press: GAME.md exempts chips added to the war
        # spot from PAST_POSTING, not chips taken back (WAGER_REMOVED; §(g)(2): no
        # player shall remove or alter a wager until it is decided).
        return _KEPT, hand.war.amount, name
    return _FREE, None, name


def _sensor_fault(ctx: _Ctx, position: int, spot: SpotKind, *, critical: bool) -> None:
    severity = Severity.CRITICAL if critical else Severity.WARNING
    if critical and _open_alert(ctx, AlertCode.SENSOR_FAULT, position, spot.value):
        return
    _raise(
        ctx,
        AlertCode.SENSOR_FAULT,
        f"P{position} {spot.value} sensor reports a fault",
        severity=severity,
        position=position,
        spot=spot.value,
    )


def _on_spots(ctx: _Ctx, inp: SpotsChanged) -> None:
    nbits = ctx.setup.positions * 3
    mask = (1 << nbits) - 1
    present = inp.present & mask if inp.present >= 0 else 0
    fault = inp.fault & mask if inp.fault >= 0 else 0
    values: tuple[tuple[int, int], ...] | None = None
    new_vals: dict[int, int] = {}
    if inp.values is not None:
        for b, cents in inp.values:
            if 0 <= b < nbits and (present >> b) & 1 and cents >= 0:
                new_vals[b] = cents
        values = tuple(sorted(new_vals.items()))
    prev = ctx.spots
    new = Spots(present, fault, values)
    if new == prev:
        return
    ctx.spots = new
    latched = ctx.round.latched
    new_faults = fault & ~prev.fault
    if not latched:
        # Betting: chips come and go freely; only a newly faulty sensor is news.
        while new_faults:
            low = new_faults & -new_faults
            b = low.bit_length() - 1
            new_faults ^= low
            _sensor_fault(ctx, b // 3 + 1, SPOT_NAMES[b % 3], critical=False)
        return
    prev_vals = dict(prev.values) if prev.values is not None else None
    changed = (prev.present ^ present) | new_faults
    if prev_vals is not None and values is not None:
        for b, cents in new_vals.items():
            old = prev_vals.get(b)
            if old is not None and old != cents:
                changed |= 1 << b
    while changed:
        low = changed & -changed
        bit = low.bit_length() - 1
        changed ^= low
        position, spot = bit // 3 + 1, bit % 3
        was = (prev.present >> bit) & 1
        now = (present >> bit) & 1
        pv = prev_vals.get(bit) if prev_vals is not None else None
        nv = new_vals.get(bit) if values is not None else None
        raised_value = pv is not None and nv is not None and nv > pv
        lowered_value = pv is not None and nv is not None and nv < pv
        added = (now and not was) or (now and was and raised_value)
        removed = (was and not now) or (now and was and lowered_value)
        kind, amount, name = _guard(ctx, position, spot)
        if (fault >> bit) & 1 and not (prev.fault >> bit) & 1:
            _sensor_fault(ctx, position, name, critical=kind in (_LATCHED, _KEPT))
        if kind == _FREE:
            continue
        if kind == _LATE:
            if added and bit not in ctx.round.late_warned:
                rnd = ctx.round
                ctx.round = rnd._replace(late_warned=rnd.late_warned | {bit})
                _raise(
                    ctx,
                    AlertCode.LATE_WAGER,
                    f"P{position} {name.value}: chips placed after no more bets join the "
                    "next round",
                    position=position,
                    spot=name.value,
                )
            continue
        if kind == _OPEN:
            over = bool(added)
            under = False
        elif kind == _KEPT:
            over = False
            under = bool(removed) and (
                not now or (amount is not None and nv is not None and nv < amount)
            )
        else:
            over = bool(added) and amount is not None and nv is not None and nv > amount
            under = bool(removed) and (
                not now or (amount is not None and nv is not None and nv < amount)
            )
        if over and not _open_alert(ctx, AlertCode.PAST_POSTING, position, name.value):
            _raise(
                ctx,
                AlertCode.PAST_POSTING,
                f"P{position} {name.value}: chips added after no more bets",
                position=position,
                spot=name.value,
            )
        if under and not _open_alert(ctx, AlertCode.WAGER_REMOVED, position, name.value):
            _raise(
                ctx,
                AlertCode.WAGER_REMOVED,
                f"P{position} {name.value}: chips removed before the wager was settled",
                position=position,
                spot=name.value,
            )


# ---------------------------------------------------------------- devices and broker


def _set_device(ctx: _Ctx, name: str, dev: DeviceState) -> None:
    i = DEVICE_NAMES.index(name)
    devices = ctx.devices
    ctx.devices = (*devices[:i], dev, *devices[i + 1 :])


def _on_online(ctx: _Ctx, inp: DeviceOnline) -> None:
    if inp.device not in DEVICE_NAMES:
        return
    dev = ctx.devices[DEVICE_NAMES.index(inp.device)]
    if dev.online:
        return
    _set_device(ctx, inp.device, dev._replace(online=True, seen=True, detail=None))
    offline = [
        a for a in ctx.alerts.open if a.code is AlertCode.DEVICE_OFFLINE and a.device == inp.device
    ]
    if dev.seen or offline:
        _raise(ctx, AlertCode.DEVICE_ONLINE, f"{inp.device} is back", device=inp.device)
    # A device alert resolves itself when the device is back (GAME.md).
    _resolve(ctx, offline, ResolvedBy.DEVICE_ONLINE)
    _advance(ctx)


def _on_offline(ctx: _Ctx, inp: DeviceOffline) -> None:
    if inp.device not in DEVICE_NAMES:
        return
    dev = ctx.devices[DEVICE_NAMES.index(inp.device)]
    _set_device(ctx, inp.device, dev._replace(online=False, detail=inp.detail))
    if any(a.code is AlertCode.DEVICE_OFFLINE and a.device == inp.device for a in ctx.alerts.open):
        return
    if not dev.online and dev.detail is not None:
        # Already known to be offline (its alert was confirmed): say it once.
        return
    _raise(
        ctx,
        AlertCode.DEVICE_OFFLINE,
        f"{inp.device} is offline: {inp.detail}",
        device=inp.device,
    )


def _on_shoe_status(ctx: _Ctx, inp: ShoeStatus) -> None:
    dev = ctx.devices[DEVICE_NAMES.index("shoe")]
    state = inp.state.upper()
    if dev.status != state:
        _set_device(ctx, "shoe", dev._replace(status=state))


def _on_refused(ctx: _Ctx, inp: PublishRefused) -> None:
    book = ctx.alerts
    last = dict(book.refused)
    before = last.get(inp.topic)
    if before is not None and inp.at - before < BROKER_REFUSED_INTERVAL:
        return
    last[inp.topic] = inp.at
    ctx.alerts = AlertBook(book.open, book.raised, tuple(sorted(last.items())))
    _raise(
        ctx,
        AlertCode.BROKER_REFUSED,
        f"the broker refused a publish to {inp.topic} (reason 0x{inp.reason_code:02X}, "
        f"message {inp.message_id}); it stays in the outbox",
    )


# ---------------------------------------------------------------- the console


def _parse_position(ctx: _Ctx, arg: str | None) -> int | None:
    if arg is None:
        return None
    text = arg.strip()
    if not text.isdecimal() or len(text) > 3:
        return None
    p = int(text)
    return p if 1 <= p <= ctx.setup.positions else None


def _press_shuffled(ctx: _Ctx, arg: str | None) -> str | None:
    # §(h)(1), GAME.md: accepted only between rounds (no wagers latched).
    if ctx.round.latched:
        return NakReason.NOT_NOW
    shoe = ctx.shoe
    number = shoe.number + 1
    shoe_id = f"S{number}-{ctx.at.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    burns = ctx.setup.rules.burn_new_shoe
    ctx.shoe = ShoeState(number=number, id=shoe_id, burns_due=burns)
    ctx.phase = Phase.BETTING
    ctx.emit(EventType.SHOE_STARTED, {"shoe_id": shoe_id}, table_level=True)
    return None


def _press_dealer(ctx: _Ctx, arg: str | None) -> str | None:
    dealer = (arg or "").strip()
    if not dealer:
        return NakReason.BAD_ARGUMENT
    if ctx.round.latched:
        return NakReason.NOT_NOW
    ctx.dealer = dealer
    # §(h)(1): each new dealer discards one burn card before dealing; a flag,
    # so a new shoe and a new dealer before the same deal burn once.
    ctx.shoe = ctx.shoe._replace(burns_due=ctx.setup.rules.burn_new_shoe)
    ctx.emit(EventType.DEALER_CHANGED, {"dealer": dealer}, table_level=True)
    return None


def _press_no_more_bets(ctx: _Ctx, arg: str | None) -> str | None:
    if ctx.phase is not Phase.BETTING:
        return NakReason.NOT_NOW
    if not _anyone_playing(ctx):
        return NakReason.NO_WAGERS
    _latch(ctx, LATCH_NO_MORE_BETS)
    return None


def _tied_undecided(ctx: _Ctx, arg: str | None) -> Hand | str:
    if ctx.phase is not Phase.TIE_DECISION or ctx.alerts.open:
        return NakReason.NOT_NOW
    position = _parse_position(ctx, arg)
    hand = ctx.round.hand(position) if position is not None else None
    if hand is None or hand.outcome is not Outcome.TIE or hand.decision is not None:
        return NakReason.BAD_POSITION
    return hand


def _press_surrender(ctx: _Ctx, arg: str | None) -> str | None:
    hand = _tied_undecided(ctx, arg)
    if isinstance(hand, str):
        return hand
    _decide(ctx, hand, Decision.SURRENDER)
    return None


def _press_war(ctx: _Ctx, arg: str | None) -> str | None:
    hand = _tied_undecided(ctx, arg)
    if isinstance(hand, str):
        return hand
    # §(i)(5): the dealer confirms the placement of the war wager.
    if not (ctx.spots.present >> spot_bit(hand.position, SPOT_WAR)) & 1:
        return NakReason.NO_WAR_WAGER
    _decide(ctx, hand, Decision.WAR)
    return None


def _press_card(ctx: _Ctx, arg: str | None) -> str | None:
    rnd = ctx.round
    index = next((i for i, c in enumerate(rnd.cards) if c.pending), None)
    if index is None:
        return NakReason.NOT_NOW
    card = (arg or "").strip().upper()
    if card not in CARD_INDEX:
        return NakReason.BAD_CARD
    slot = rnd.cards[index]._replace(card=card, source=Source.MANUAL, pending=False)
    ctx.round = rnd._replace(cards=(*rnd.cards[:index], slot, *rnd.cards[index + 1 :]))
    foreign = _count_card(ctx, card)
    _card_event(ctx, slot)
    misread = [a for a in ctx.alerts.open if a.code is AlertCode.MISREAD and a.n == slot.n]
    _resolve(ctx, misread, ResolvedBy.CARD)
    if foreign:
        _raise(
            ctx,
            AlertCode.FOREIGN_CARD,
            f"read {slot.n}: {card} seen more than {ctx.setup.decks} times in this shoe",
            position=slot.position,
            n=slot.n,
        )
    _advance(ctx)
    return None


def _press_confirm(ctx: _Ctx, arg: str | None) -> str | None:
    confirmable = [a for a in ctx.alerts.open if a.code not in NOT_CONFIRMABLE]
    if not confirmable:
        return NakReason.NOT_NOW
    _resolve(ctx, confirmable, ResolvedBy.CONFIRM)
    _advance(ctx)
    return None


def _press_void(ctx: _Ctx, arg: str | None) -> str | None:
    rnd = ctx.round
    round_alerts = any(a.code is not AlertCode.DEVICE_OFFLINE for a in ctx.alerts.open)
    if not (rnd.latched or rnd.cards or rnd.discards or round_alerts):
        return NakReason.NOT_NOW
    _void(ctx)
    return None


_ACTIONS: Final = {
    "SHUFFLED": _press_shuffled,
    "DEALER": _press_dealer,
    "NO_MORE_BETS": _press_no_more_bets,
    "SURRENDER": _press_surrender,
    "WAR": _press_war,
    "CARD": _press_card,
    "CONFIRM": _press_confirm,
    "VOID_ROUND": _press_void,
}


_NO_ARGUMENT: Final = frozenset({"SHUFFLED", "NO_MORE_BETS", "CONFIRM", "VOID_ROUND"})


def _on_press(ctx: _Ctx, inp: ConsolePress) -> None:
    book = ctx.console
    answers = book.answers
    if inp.k <= book.top:
        for k, answer in answers:
            if k == inp.k:
                # DEVICES.md: a press already answered gets the same answer, once acted on.
                ctx.out.append(ConsoleReply(inp.k, answer))
                return
    if inp.k <= book.floor:
        ctx.out.append(ConsoleReply(inp.k, NakReason.STALE_PRESS.value))
        return
    first = len(ctx.out)
    action = _ACTIONS.get(inp.action)
    reason: str | None
    if action is None:
        reason = NakReason.UNKNOWN_ACTION.value
    elif inp.arg is not None and inp.action in _NO_ARGUMENT:
        # DEVICES.md: these buttons carry no argument; one that does was not pressed as meant.
        reason = NakReason.BAD_ARGUMENT.value
    else:
        reason = action(ctx, inp.arg)
    if reason is not None:
        reason = str(reason)
    ctx.out.insert(first, ConsoleReply(inp.k, reason))
    answers = (*answers, (inp.k, reason))
    floor = book.floor
    if len(answers) > CONSOLE_MEMORY:
        floor = max(floor, max(k for k, _ in answers[: len(answers) - CONSOLE_MEMORY]))
        answers = answers[len(answers) - CONSOLE_MEMORY :]
    ctx.console = ConsoleBook(answers, floor, max(book.top, inp.k))


def _on_console_restarted(ctx: _Ctx, inp: ConsoleRestarted) -> None:
    # DEVICES.md: the console's numbering starts again; old answers are forgotten.
    ctx.console = ConsoleBook()


_HANDLERS: Final[dict[type[Any], Any]] = {
    CardRead: _on_card,
    Misread: _on_misread,
    CoverRead: _on_cover,
    ReadGap: _on_gap,
    SpotsChanged: _on_spots,
    ConsolePress: _on_press,
    ConsoleRestarted: _on_console_restarted,
    DeviceOnline: _on_online,
    DeviceOffline: _on_offline,
    ShoeStatus: _on_shoe_status,
    PublishRefused: _on_refused,
}


_CARD_EVENT: Final = EventType.CARD._value_


def _dealt_card(state: TableState, inp: CardRead) -> tuple[TableState, list[Output]] | None:
    """The most common input, a card dealt in the middle of a deal, taken in one step.

    Exactly what ``_on_card`` does for a new, known card that is neither a due
    burn card, nor one copy too many, nor the last card of the deal (which
    settles); None for every other read, which takes the general path.
    """
    n = inp.n
    if n <= state.last_read_n:
        return None
    phase = state.phase
    if phase is not _DEALING and phase is not _WAR_DEALING:
        return None
    rnd = state.round
    plan = rnd.plan
    plan_i = rnd.plan_i
    if plan_i + 1 >= len(plan):
        return None
    shoe = state.shoe
    if shoe.burns_due > 0 and not rnd.deal_started and phase is _DEALING:
        return None
    card = inp.card
    index = CARD_INDEX.get(card)
    if index is None:
        return None
    shift = 8 * index
    counts = shoe.counts
    copies = ((counts >> shift) & COPIES_MAX) + 1
    if copies > state.setup.decks or copies > COPIES_MAX:
        return None
    role, position = plan[plan_i]
    slot = _tuple_new(CardSlot, (n, card, role, position, _SHOE, False))
    seq = state.seq + 1
    event = new_event(
        seq,
        _CARD_EVENT,
        state.round_id,
        inp.at,
        {
            "n": n,
            # §(h)(1): a burn card's rank is revealed to no one at the table.
            "card": None if role is _BURN or role is _WAR_BURN else card,
            "role": role._value_,
            "position": position,
            "source": _SHOE._value_,
        },
    )
    new_state = _tuple_new(
        TableState,
        (
            state.setup,
            seq,
            phase,
            state.round_id,
            state.dealer,
            n,
            _tuple_new(
                ShoeState,
                (
                    shoe.number,
                    shoe.id,
                    counts + (1 << shift),
                    shoe.cards_read + 1,
                    shoe.cover_seen,
                    shoe.cover_n,
                    shoe.burns_due,
                ),
            ),
            _tuple_new(
                RoundState,
                (
                    rnd.latched,
                    rnd.latched_by,
                    rnd.started,
                    rnd.hands,
                    rnd.void_ties,
                    (*rnd.cards, slot),
                    plan,
                    plan_i + 1,
                    True,
                    rnd.original_settled,
                    rnd.alert_ids,
                    rnd.discards,
                    rnd.late_warned,
                ),
            ),
            state.spots,
            state.alerts,
            state.devices,
            state.console,
            state.stats,
        ),
    )
    return new_state, [event]


def transition(state: TableState, inp: Input) -> tuple[TableState, list[Output]]:
    """The table after ``inp``, and what to do about it. Pure; never raises."""
    if type(inp) is CardRead:
        fast = _dealt_card(state, inp)
        if fast is not None:
            return fast
    elif type(inp) is Tick:
        return state, []
    return _transition(state, inp)


def _transition(state: TableState, inp: Input) -> tuple[TableState, list[Output]]:
    """``transition`` by the general path: every input, every rule."""
    if type(inp) is Tick:
        return state, []
    handler = _HANDLERS.get(type(inp))
    if handler is None:
        return state, []
    ctx = _Ctx(state, inp.at)
    handler(ctx, inp)
    return ctx.freeze(), ctx.out
