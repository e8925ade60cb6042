"""The API's JSON values as what each page shows: pure, no I/O, no clock reads.

Each builder reads defensively (``.get``), because a table of an older version
may lack a field; a missing value shows as a dash, never as an error page.
Burn cards show as a count only, never a rank (§(h)(1)), even though the
round record holds the burn's rank for the auditors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from table_controller.feed.common import BURN_ROLES
from table_controller.recorder.web.data import Json, parse_time

DEVICES: Final = ("shoe", "sensors", "console")


@dataclass(frozen=True, slots=True)
class AlertRow:
    site: str
    table: str
    alert: str
    code: str
    severity: str
    message: str
    round_id: int | None
    position: int | None
    raised: datetime | None
    resolved: datetime | None
    resolved_by: str | None

    @property
    def critical(self) -> bool:
        return self.severity == "critical"


@dataclass(frozen=True, slots=True)
class Tile:
    site: str
    table: str
    online: bool | None
    phase: str | None
    dealer: str | None
    round_id: int | None
    held: bool
    devices: tuple[tuple[str, str], ...]
    outbox_depth: int | None
    rounds_per_hour: float | None
    win_today: int | None
    rounds_today: int | None
    dealer_pace: float | None
    """Rounds per hour of the table's latest dealer session today (``dealer_changed``)."""
    flags: tuple[str, ...]
    """The report's flags of today's figures (``HOLD_VARIANCE``: win outside theo's 95 %)."""
    critical: tuple[AlertRow, ...]
    last_seen: datetime | None

    @property
    def key(self) -> str:
        return f"{self.site}/{self.table}"

    @property
    def standing_out(self) -> bool:
        """A tile that must catch the eye: an open critical alert or a held round."""
        return bool(self.critical) or self.held


@dataclass(frozen=True, slots=True)
class Hand:
    position: int
    card: str | None
    outcome: str | None
    decision: str | None
    war_card: str | None
    war_outcome: str | None
    wagers: tuple[tuple[str, int | None, str, int | None], ...]
    net: int | None


@dataclass(frozen=True, slots=True)
class RoundRow:
    round_id: int
    epoch: str | None
    ended: datetime | None
    dealer: str | None
    dealer_card: str | None
    dealer_war_card: str | None
    burns: int
    manual_cards: int
    void: bool
    void_reason: str | None
    hands: tuple[Hand, ...]
    net: int | None
    alerts: int


@dataclass(frozen=True, slots=True)
class SeatNow:
    position: int
    wagers: tuple[tuple[str, int | None], ...]
    cards: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class Layout:
    phase: str | None
    round_id: int | None
    held: bool
    dealer: str | None
    shoe_cards_read: int | None
    cover_seen: bool
    dealer_cards: tuple[str | None, ...]
    burns: int
    seats: tuple[SeatNow, ...]


def alert_row(a: Mapping[str, Any]) -> AlertRow:
    return AlertRow(
        site=str(a.get("site", "")),
        table=str(a.get("table", "")),
        alert=str(a.get("alert", "")),
        code=str(a.get("code", "")),
        severity=str(a.get("severity", "")),
        message=str(a.get("message") or ""),
        round_id=a.get("round_id"),
        position=a.get("position"),
        raised=parse_time(a.get("raised")),
        resolved=parse_time(a.get("resolved")),
        resolved_by=a.get("resolved_by"),
    )


def tile(entry: Mapping[str, Any], today: Mapping[str, Any] | None) -> Tile:
    """A floor tile from an ``/api/tables`` entry and the table's report row of today."""
    status: Json = entry.get("status") or {}
    state: Json = entry.get("state") or {}
    stats: Json = entry.get("stats") or {}
    devices: Json = status.get("devices") or {}
    outbox: Json = status.get("outbox") or {}
    return Tile(
        site=str(entry.get("site", "")),
        table=str(entry.get("table", "")),
        online=status.get("online"),
        phase=state.get("phase"),
        dealer=state.get("dealer"),
        round_id=state.get("round_id"),
        held=bool(state.get("held")),
        devices=tuple(
            (name, str((devices.get(name) or {}).get("state", "unknown"))) for name in DEVICES
        ),
        outbox_depth=outbox.get("depth"),
        rounds_per_hour=stats.get("rounds_per_hour"),
        win_today=(today or {}).get("win"),
        rounds_today=(today or {}).get("rounds"),
        dealer_pace=((today or {}).get("dealer_pace") or {}).get("rounds_per_hour"),
        flags=tuple((today or {}).get("flags") or ()),
        critical=tuple(alert_row(a) for a in entry.get("open_critical") or ()),
        last_seen=parse_time(entry.get("last_seen")),
    )


def layout(state: Mapping[str, Any] | None) -> Layout | None:
    if not state:
        return None
    shoe: Json = state.get("shoe") or {}
    return Layout(
        phase=state.get("phase"),
        round_id=state.get("round_id"),
        held=bool(state.get("held")),
        dealer=state.get("dealer"),
        shoe_cards_read=shoe.get("cards_read"),
        cover_seen=bool(shoe.get("cover_seen")),
        dealer_cards=tuple(state.get("dealer_cards") or ()),
        burns=int(state.get("burn_cards") or 0),
        seats=tuple(
            SeatNow(
                position=p["position"],
                wagers=tuple((spot, amount) for spot, amount in (p.get("wagers") or {}).items()),
                cards=tuple(p.get("cards") or ()),
            )
            for p in state.get("positions") or ()
            if type(p.get("position")) is int  # a table of another version may leave it out
        ),
    )


def round_row(record: Mapping[str, Any]) -> RoundRow:
    """One round record as its hands: every card but the burns, which are counted."""
    cards: Sequence[Json] = record.get("cards") or ()
    return RoundRow(
        round_id=int(record.get("round_id", 0)),
        epoch=record.get("epoch"),
        ended=parse_time(record.get("ended")),
        dealer=record.get("dealer"),
        dealer_card=record.get("dealer_card"),
        dealer_war_card=record.get("dealer_war_card"),
        burns=sum(1 for c in cards if c.get("role") in BURN_ROLES),
        manual_cards=sum(1 for c in cards if c.get("source") == "manual"),
        void=bool(record.get("void")),
        void_reason=record.get("void_reason"),
        hands=tuple(
            Hand(
                position=int(p["position"]),
                card=p.get("card"),
                outcome=p.get("outcome"),
                decision=p.get("decision"),
                war_card=p.get("war_card"),
                war_outcome=p.get("war_outcome"),
                wagers=tuple(
                    (w["spot"], w.get("amount"), str(w.get("result", "")), w.get("net"))
                    for w in p.get("wagers") or ()
                ),
                net=p.get("net"),
            )
            for p in record.get("positions") or ()
        ),
        net=record.get("net"),
        alerts=len(record.get("alerts") or ()),
    )


def rounds_per_hour(
    records: Iterable[Mapping[str, Any]], start: datetime, end: datetime
) -> list[tuple[str, float]]:
    """Rounds ended in each clock hour from ``start`` to ``end`` (UTC), oldest first."""
    first = start.replace(minute=0, second=0, microsecond=0)
    hours = [first + timedelta(hours=i) for i in range(int((end - first) / timedelta(hours=1)) + 1)]
    counts: Counter[datetime] = Counter()
    for r in records:
        ended = parse_time(r.get("ended"))
        if ended is not None and start <= ended <= end:
            counts[ended.replace(minute=0, second=0, microsecond=0)] += 1
    return [(h.strftime("%H:00"), float(counts[h])) for h in hours]


def net_over_time(records: Iterable[Mapping[str, Any]]) -> list[tuple[datetime, int]]:
    """The players' net summed round by round, in the order the rounds ended."""
    points: list[tuple[datetime, int]] = []
    total = 0
    timed = [(parse_time(r.get("ended")), r.get("net")) for r in records]
    for ended, net in sorted((t, n) for t, n in timed if t is not None):
        total += net or 0
        points.append((ended, total))
    return points


def open_for(raised: datetime | None, now: datetime) -> str:
    """How long an alert has been open, as a supervisor reads it: ``2 h 05 min``, ``40 s``."""
    if raised is None:
        return "-"
    seconds = max(0, int((now - raised).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes, _ = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def money(cents: int | None) -> str:
    """Cents as ``1,234.50`` (``-12.50``); a dash when the amount is unknown."""
    if cents is None:
        return "-"
    whole, part = divmod(abs(int(cents)), 100)
    return f"{'-' if cents < 0 else ''}{whole:,}.{part:02d}"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f} %"
