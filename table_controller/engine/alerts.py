"""Alerts and holds (docs/rules.md "What the controller must catch").

Every alert is journaled and published as an ``alert`` event; a critical one
holds the round until it is resolved, and while held nothing is settled.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from typing import Final

from table_controller.engine.domain import Alert, AlertCode, Severity, SpotKind
from table_controller.engine.inputs import SERVICE_ALERT_CODES, DeviceName, ServiceAlert
from table_controller.engine.outputs import ConsoleShow, EventType
from table_controller.engine.table import Table

# docs/rules.md's alert table: the severity of each code (SENSOR_FAULT depends on the spot).
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
    AlertCode.WAGER_UNVERIFIED: Severity.CRITICAL,
    AlertCode.SHOE_FAULT: Severity.CRITICAL,
    AlertCode.NO_MORE_BETS_MISSING: Severity.WARNING,
    AlertCode.JOURNAL_FAULT: Severity.CRITICAL,
    AlertCode.REPLAY_UNAVAILABLE: Severity.WARNING,
}
# The wager alerts that compare a spot with its latched amount (docs/rules.md).
WAGER_ALERTS: Final = frozenset(
    {AlertCode.PAST_POSTING, AlertCode.WAGER_REMOVED, AlertCode.WAGER_UNVERIFIED}
)


def alert_event(t: Table, a: Alert, resolved_by: str | None) -> None:
    t.emit(
        EventType.ALERT,
        {
            "alert": a.alert,
            "code": a.code.value,
            "severity": a.severity.value,
            "message": a.message,
            "round_id": a.round_id,
            "position": a.position,
            "spot": None if a.spot is None else a.spot.value,
            "resolved_by": resolved_by,
        },
    )


def raise_alert(
    t: Table,
    code: AlertCode,
    message: str,
    *,
    severity: Severity | None = None,
    position: int | None = None,
    spot: SpotKind | None = None,
    n: int | None = None,
    device: DeviceName | None = None,
) -> None:
    """Raise an alert: journaled, published, and held on while open if critical."""
    t.alerts_raised += 1
    # Deterministic and unique within the table's history: a counter that the
    # journal replay rebuilds, and the input time.
    alert_id = f"A{t.alerts_raised}-{t.at.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    sev = severity or SEVERITY[code]
    # docs/rules.md: an alert belongs to the round open when it was raised.
    a = Alert(alert_id, code, sev, message, t.round_id, position, spot, n, device)
    t.round.alert_ids.append(alert_id)
    _count(t, code)
    alert_event(t, a, None)
    if sev is Severity.CRITICAL:
        # docs/rules.md: only critical alerts are open until resolved; they hold the round.
        t.open_alerts.append(a)
        where = f" P{position}" if position is not None else ""
        t.out.append(ConsoleShow(f"HOLD {code.value}{where}"))


def _count(t: Table, code: AlertCode) -> None:
    counts = dict(t.stats.alerts_by_code)
    counts[code.value] = counts.get(code.value, 0) + 1
    t.stats = t.stats._replace(alerts_by_code=tuple(sorted(counts.items())))


def on_service_alert(t: Table, inp: ServiceAlert) -> None:
    """An alert the service raised (or resolved) itself: it holds nothing here (the
    service refuses every input while its journal faults), but it is an event, in the
    round's alerts and counted, as every alert is."""
    if inp.code not in SERVICE_ALERT_CODES:
        return  # the service raises no other: nothing to record (feed never raises)
    code = AlertCode(inp.code)
    a = Alert(inp.alert, code, SEVERITY[code], inp.message, t.round_id)
    if inp.resolved_by is None:
        t.round.alert_ids.append(a.alert)
        _count(t, code)
    alert_event(t, a, inp.resolved_by)


def resolve(t: Table, alerts: Iterable[Alert], by: str) -> None:
    """Close open alerts, say so, and tell the dealer when the hold is over."""
    gone = list(alerts)
    if not gone:
        return
    ids = {a.alert for a in gone}
    t.open_alerts = [a for a in t.open_alerts if a.alert not in ids]
    for a in gone:
        alert_event(t, a, by)
    if not t.open_alerts:
        t.out.append(ConsoleShow("HOLD CLEARED"))


def open_alerts(
    t: Table, code: AlertCode, position: int | None = None, spot: SpotKind | None = None
) -> list[Alert]:
    """The open alerts of ``code`` about this position and spot."""
    return [
        a for a in t.open_alerts if a.code is code and a.position == position and a.spot == spot
    ]


def check_limits(t: Table, position: int, spot: SpotKind, amount: int | None) -> None:
    """WAGER_OUT_OF_LIMITS when a known amount goes into action outside the table limits."""
    if amount is None:
        return
    limits = t.setup.limits
    # docs/rules.md: the war wager uses the initial limits, war_tie the tie limits.
    pair = limits.initial if spot in (SpotKind.INITIAL, SpotKind.WAR) else limits.tie
    if pair is None or pair[0] <= amount <= pair[1]:
        return
    raise_alert(
        t,
        AlertCode.WAGER_OUT_OF_LIMITS,
        f"P{position} {spot.value} wager {amount} cents outside the limits {pair[0]}..{pair[1]}",
        position=position,
        spot=spot,
    )


def sensor_fault(t: Table, position: int, spot: SpotKind, *, critical: bool) -> None:
    """SENSOR_FAULT: critical when the spot plays (docs/rules.md), once while open."""
    if critical and open_alerts(t, AlertCode.SENSOR_FAULT, position, spot):
        return
    raise_alert(
        t,
        AlertCode.SENSOR_FAULT,
        f"P{position} {spot.value} sensor reports a fault",
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        position=position,
        spot=spot,
    )
