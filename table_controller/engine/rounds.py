"""A round's end: settled or void, its record, the table's figures, the next round."""

from __future__ import annotations

from table_controller.engine.alerts import resolve
from table_controller.engine.betting import sensors_back
from table_controller.engine.domain import (
    AlertCode,
    Decision,
    Outcome,
    Phase,
    ResolvedBy,
)
from table_controller.engine.outputs import ConsoleShow, EventType, RoundRecorded, SetLights
from table_controller.engine.records import RoundRecord, WagerResult
from table_controller.engine.settlement import build_record
from table_controller.engine.table import Round, Table

# docs/rules.md: the device alerts resolve themselves when the device is back; a void does not.
DEVICE_ALERTS = frozenset({AlertCode.DEVICE_OFFLINE})


def enter_shuffle_due(t: Table) -> None:
    t.phase = Phase.SHUFFLE_DUE
    t.emit(EventType.RESHUFFLE_DUE, {})
    t.out.append(ConsoleShow("SHUFFLE DUE"))


def _record(t: Table, void_reason: str | None) -> RoundRecord:
    record = build_record(
        t.setup,
        t.round,
        round_id=t.round_id,
        shoe_id=t.shoe.id,
        dealer=t.dealer,
        ended=t.at,
        void_reason=void_reason,
    )
    t.out.append(RoundRecorded(t.round_id, record))
    return record


def finish_round(t: Table) -> None:
    """Rule 7 (docs/rules.md): record, event, figures; then a round opens (or a shuffle is due)."""
    record = _record(t, None)
    t.emit(EventType.ROUND_SETTLED, {"net": record.net})
    _count(t, record)
    st = t.stats
    t.stats = st._replace(
        rounds=st.rounds + 1,
        first_started=st.first_started if st.first_started is not None else t.round.started,
        last_ended=t.at,
    )
    next_round(t)


def _count(t: Table, record: RoundRecord) -> None:
    """What a round's settled wagers add to the table's figures: the drop, the win, and its
    ties, wars and surrenders (a round voided after its original deal counts what that deal
    settled: docs/rules.md VOID_ROUND)."""
    st = t.stats
    drop, win = st.drop, st.win
    if drop is not None and win is not None:
        if record.net is None:
            drop = win = None
        else:
            # A known round net means every amount of the round is known. A void
            # wager (no initial wager, §(h)(3)(iii)) was never in action.
            for p in record.positions:
                for w in p.wagers:
                    if w.result is not WagerResult.VOID and w.amount is not None:
                        drop += w.amount
            win -= record.net
    ties = wars = surrenders = 0
    for h in t.round.hands.values():
        if h.outcome is Outcome.TIE:
            ties += 1
            if h.decision is Decision.WAR:
                wars += 1
            elif h.decision is Decision.SURRENDER:
                surrenders += 1
    t.stats = st._replace(
        ties=st.ties + ties,
        wars=st.wars + wars,
        surrenders=st.surrenders + surrenders,
        drop=drop,
        win=win,
    )


def next_round(t: Table) -> None:
    t.round_id += 1
    t.round = Round()
    if t.sensors_check_due:
        # No wager is in action any more: the board back is simply back.
        t.sensors_check_due = False
        sensors_back(t)
    if t.phase is Phase.SHUFFLE_DUE:
        # A round voided while the shuffle is due: it stays due.
        return
    if t.shoe.cover_seen:
        # §(h)(4): the round that met the cover card is complete: reshuffle.
        enter_shuffle_due(t)
    else:
        t.phase = Phase.BETTING


VOIDED_BY_THE_DEALER = "voided by the dealer"
# docs/rules.md §(h)(1), §(h)(4): a round never dealt whose cards (a new dealer's burn, a
# card set aside) came from a shoe that SHUFFLED ended: recorded with that shoe.
VOIDED_BY_THE_SHUFFLE = "the shoe was changed before this round was dealt"


def void_round(t: Table, why: str = VOIDED_BY_THE_DEALER) -> None:
    """A misdeal: every latched wager is void, but for what an original deal already settled
    (§(i)(1)-(2): collected and paid before the war deal); the record says so, a new
    round opens."""
    round_alerts = [a for a in t.open_alerts if a.code not in DEVICE_ALERTS]
    resolve(t, round_alerts, ResolvedBy.VOID_ROUND)
    if t.phase is Phase.TIE_DECISION or t.round.next_due() is not None:
        t.out.append(SetLights(0))
    codes = sorted({a.code.value for a in round_alerts})
    reason = why + (f" ({', '.join(codes)})" if codes else "")
    record = _record(t, reason)
    t.emit(EventType.ROUND_VOIDED, {"reason": reason})
    if t.round.original_settled:
        _count(t, record)  # what the original deal settled stands (§(i)(1)-(2))
    t.stats = t.stats._replace(voids=t.stats.voids + 1)
    next_round(t)
