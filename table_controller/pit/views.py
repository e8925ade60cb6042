"""What the pit knows of each table: read-only views, built by :class:`~.model.PitModel`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Only critical alerts wait for an answer (docs/rules.md: "warnings and info need no answer").
_NOTICE_SEVERITIES = frozenset({"warning", "info"})


class Link(StrEnum):
    """A table's connection as its retained ``status`` tells it."""

    ONLINE = "online"
    OFFLINE = "offline"
    UNKNOWN = "unknown"


class BrokerLink(StrEnum):
    """The pit's own connection to the broker."""

    IDLE = "idle"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RETRYING = "retrying"


@dataclass(frozen=True, slots=True, order=True)
class TableKey:
    site: str
    table: str

    def __str__(self) -> str:
        return f"{self.site}/{self.table}" if self.site else self.table


@dataclass(frozen=True, slots=True)
class DeviceView:
    name: str
    state: str | None
    detail: str | None


@dataclass(frozen=True, slots=True)
class StatusView:
    online: bool | None
    version: str | None
    rules: str | None
    decks: int | None
    positions: int | None
    devices: tuple[DeviceView, ...]
    outbox_depth: int | None
    outbox_oldest_age_s: float | None
    ts: str | None
    instance: str | None = None  # the table's process (docs/feed.md: one controller per table)
    started: str | None = None
    currency: str | None = None


@dataclass(frozen=True, slots=True)
class StateView:
    phase: str | None
    round_id: str | None
    held: bool | None
    dealer: str | None
    shoe_id: str | None
    cards_read: int | None
    cover_seen: bool | None
    live_positions: int | None
    ts: str | None


@dataclass(frozen=True, slots=True)
class PositionResult:
    position: int | None
    card: str | None
    outcome: str | None
    decision: str | None
    war_card: str | None
    war_outcome: str | None
    net: int | None


@dataclass(frozen=True, slots=True)
class RoundView:
    id: str | None
    round_id: str | None
    dealer: str | None
    dealer_card: str | None
    dealer_war_card: str | None
    positions: tuple[PositionResult, ...]
    net: int | None
    void: bool
    void_reason: str | None
    ended: str | None


@dataclass(frozen=True, slots=True)
class AlertView:
    alert: str
    code: str | None
    severity: str | None
    message: str | None
    round_id: str | None
    position: int | None
    spot: str | None
    ts: str | None
    # The table's process (`status` `instance`) when the alert arrived: its alerts go
    # when its status does (offline, or replaced by another instance).
    instance: str | None = None

    @property
    def critical(self) -> bool:
        return self.severity == "critical"

    @property
    def needs_answer(self) -> bool:
        """Open until resolved: critical alerts, and any severity the pit does not know."""
        return self.severity not in _NOTICE_SEVERITIES


@dataclass(frozen=True, slots=True)
class StatsView:
    values: tuple[tuple[str, int | float | str | bool | None], ...]
    groups: tuple[tuple[str, tuple[tuple[str, int | float | str | bool | None], ...]], ...]
    ts: str | None


@dataclass(frozen=True, slots=True)
class EventsView:
    epoch: str | None = None
    last_seq: int | None = None
    last_type: str | None = None
    last_round_id: str | None = None
    last_detail: str | None = None
    missing: int = 0  # events never seen between the first and the last seen, per epoch
    out_of_order: int = 0  # events below what was already seen that filled no gap
    received: int = 0


@dataclass(frozen=True, slots=True)
class TableView:
    key: TableKey
    status: StatusView | None = None
    state: StateView | None = None
    rounds: tuple[RoundView, ...] = ()  # newest first
    open_alerts: tuple[AlertView, ...] = ()  # in the order raised
    notices: tuple[AlertView, ...] = ()  # newest first
    stats: StatsView | None = None
    events: EventsView = EventsView()
    messages: int = 0
    duplicates: int = 0
    malformed: int = 0
    unexpected: int = 0

    @property
    def link(self) -> Link:
        if self.status is None or self.status.online is None:
            return Link.UNKNOWN
        return Link.ONLINE if self.status.online else Link.OFFLINE

    @property
    def critical_open(self) -> int:
        return sum(1 for a in self.open_alerts if a.critical)


@dataclass(frozen=True, slots=True)
class ConnectionView:
    state: BrokerLink = BrokerLink.IDLE
    broker: str | None = None
    detail: str | None = None
