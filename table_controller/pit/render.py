"""The pit view of a model as a ``rich`` renderable, with no terminal."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from table_controller.pit.model import PitModel
from table_controller.pit.parse import Scalar
from table_controller.pit.views import (
    AlertView,
    BrokerLink,
    Link,
    PositionResult,
    RoundView,
    StatsView,
    StatusView,
    TableView,
)

_DEVICE_STYLES = {"ok": "green", "offline": "bold red", "fault": "bold red"}
_OUTCOME_STYLES = {"win": "green", "lose": "red", "tie": "yellow"}
_DASH = "–"


def _money(cents: int | None) -> str:
    if cents is None:
        return _DASH
    sign = "+" if cents > 0 else "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{part:02d}"


def _money_style(cents: int | None) -> str:
    if cents is None or cents == 0:
        return ""
    return "green" if cents > 0 else "red"


def _txt(value: object, style: str = "") -> Text:
    if value is None:
        return Text(_DASH, style="dim")
    return Text(str(value), style=style)


def _link_text(view: TableView) -> Text:
    return {
        Link.ONLINE: Text("ONLINE", style="bold green"),
        Link.OFFLINE: Text("OFFLINE", style="bold white on red"),
        Link.UNKNOWN: Text("?", style="dim"),
    }[view.link]


def _devices_text(view: TableView) -> Text:
    """``ok`` when every device is, else the devices that are not, by name."""
    if view.status is None or not view.status.devices:
        return _txt(None)
    # A device state from an offline table is only its last known one.
    stale = view.link is Link.OFFLINE
    troubled = [d for d in view.status.devices if d.state != "ok"]
    if not troubled:
        return Text("ok", style="dim" if stale else "green")
    text = Text()
    for n, dev in enumerate(troubled):
        if n:
            text.append(", ")
        style = "dim" if stale else _DEVICE_STYLES.get(dev.state or "", "yellow")
        text.append(f"{dev.name} {dev.state or '?'}", style=style)
    return text


def _outbox_text(status: StatusView | None) -> Text:
    if status is None or status.outbox_depth is None:
        return _txt(None)
    text = Text(str(status.outbox_depth), style="yellow" if status.outbox_depth else "")
    if status.outbox_depth and status.outbox_oldest_age_s is not None:
        text.append(f" ({status.outbox_oldest_age_s:.0f}s)", style="yellow")
    return text


def _header(model: PitModel) -> Text:
    tables = model.tables
    online = sum(1 for t in tables if t.link is Link.ONLINE)
    critical = sum(t.critical_open for t in tables)
    text = Text("Pit", style="bold")
    text.append(f" · site {model.site}" if model.site else " · all sites")
    text.append(f" · {len(tables)} tables, {online} online")
    if critical:
        text.append(f" · {critical} critical alerts open", style="bold red")
    conn = model.connection
    if conn.state is not BrokerLink.IDLE:
        style = "green" if conn.state is BrokerLink.CONNECTED else "bold yellow"
        text.append(f" · broker {conn.broker or ''} ")
        text.append(conn.state.value, style=style)
        if conn.detail and conn.state is not BrokerLink.CONNECTED:
            text.append(f" ({conn.detail})", style="yellow")
    text.append(f" · {model.messages} msgs, {model.duplicates} duplicates dropped")
    bad = model.malformed + model.unexpected + model.internal_errors
    text.append(
        f", {model.malformed} malformed, {model.unexpected} unexpected",
        style="bold yellow" if bad else "",
    )
    if model.internal_errors:
        text.append(f", {model.internal_errors} failed", style="bold red")
    return text


def _overview(tables: list[TableView], site: str | None) -> Table:
    # No vertical rules and wrapping cells: a pit terminal of 80 columns still shows it all.
    grid = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in (
        "table", "link", "devices", "outbox", "phase", "round", "dealer", "alerts", "gaps", "bad"
    ):  # fmt: skip
        grid.add_column(column, overflow="fold")
    for view in tables:
        state = view.state
        phase = _txt(state.phase if state else None)
        if state is not None and state.held:
            phase.append(" ")
            phase.append("HELD", style="bold white on red")
        open_count = len(view.open_alerts)
        alerts = Text(
            str(open_count),
            style="bold red" if view.critical_open else "yellow" if open_count else "dim",
        )
        gaps = view.events.missing
        bad = view.malformed + view.unexpected
        grid.add_row(
            Text(view.key.table if site else str(view.key), style="bold"),
            _link_text(view),
            _devices_text(view),
            _outbox_text(view.status),
            phase,
            _txt(state.round_id if state else None),
            _txt(state.dealer if state else None),
            alerts,
            Text(str(gaps), style="bold yellow" if gaps else "dim"),
            Text(str(bad), style="bold yellow" if bad else "dim"),
        )
    return grid


def _alert_line(alert: AlertView, *, open_: bool) -> Text:
    if alert.critical:
        style = "bold red"
    elif open_:
        style = "bold magenta"  # a severity this pit does not know: shown as needing an answer
    elif alert.severity == "warning":
        style = "yellow"
    else:
        style = "dim"
    text = Text("● " if open_ else "· ", style=style)
    text.append(f"{(alert.severity or '?').upper()} {alert.code or '?'}", style=style)
    where = []
    if alert.round_id is not None:
        where.append(f"round {alert.round_id}")
    if alert.position is not None:
        where.append(f"P{alert.position}")
    if alert.spot is not None:
        where.append(alert.spot)
    if where:
        text.append(" " + " ".join(where))
    if alert.message:
        text.append(f" — {alert.message}", style=style if open_ else "")
    return text


def _position_text(result: PositionResult) -> Text:
    text = Text(f"P{result.position if result.position is not None else '?'} ", style="bold")
    text.append(result.card or "??")
    if result.outcome:
        text.append(f" {result.outcome}", style=_OUTCOME_STYLES.get(result.outcome, ""))
    if result.decision:
        text.append(f"→{result.decision}")
    if result.war_card or result.war_outcome:
        text.append(f" {result.war_card or '??'}")
        if result.war_outcome:
            text.append(f" {result.war_outcome}", style=_OUTCOME_STYLES.get(result.war_outcome, ""))
    if result.net is not None:
        text.append(f" {_money(result.net)}", style=_money_style(result.net))
    return text


def _rounds_table(rounds: tuple[RoundView, ...]) -> Table:
    grid = Table(box=None, pad_edge=False, header_style="dim", show_edge=False)
    grid.add_column("round", no_wrap=True)
    grid.add_column("dealer", no_wrap=True)
    grid.add_column("positions")
    grid.add_column("net", justify="right", no_wrap=True)
    for record in rounds:
        dealer = Text(record.dealer_card or "??")
        if record.dealer_war_card:
            dealer.append(f" / war {record.dealer_war_card}")
        if record.void:
            cells = Text("VOID", style="bold yellow")
            if record.void_reason:
                cells.append(f" ({record.void_reason})", style="yellow")
            if record.positions:
                cells.append("  ")
        else:
            cells = Text()
        cells.append(Text("  ").join(_position_text(p) for p in record.positions))
        grid.add_row(
            _txt(record.round_id),
            dealer,
            cells,
            Text(_money(record.net), style=_money_style(record.net)),
        )
    return grid


_STAT_LABELS = {
    "rounds_per_hour": "rounds/h",
    "alerts_by_code": "alerts",
}
_MONEY_STATS = frozenset({"drop", "win", "drop_cents", "win_cents", "net"})


def _stat_value(name: str, value: Scalar) -> str:
    if name in _MONEY_STATS and isinstance(value, int) and not isinstance(value, bool):
        return _money(value).lstrip("+")
    if isinstance(value, float):
        return f"{value:.1f}"
    return _DASH if value is None else str(value)


def _stats_text(stats: StatsView) -> Text:
    text = Text("stats ", style="dim")
    parts = [
        f"{_STAT_LABELS.get(name, name)} {_stat_value(name, value)}" for name, value in stats.values
    ]
    for name, items in stats.groups:
        inner = ", ".join(f"{k} {_stat_value(k, v)}" for k, v in items) or "none"
        parts.append(f"{_STAT_LABELS.get(name, name)}: {inner}")
    text.append(" · ".join(parts))
    return text


def _detail(view: TableView) -> Panel:
    lines: list[RenderableType] = []
    for alert in view.open_alerts:
        lines.append(_alert_line(alert, open_=True))
    status = view.status
    if status is not None:
        for dev in status.devices:
            if dev.state != "ok" and dev.detail:
                lines.append(Text(f"{dev.name} {dev.state or '?'}: {dev.detail}", style="yellow"))
    for alert in view.notices:
        lines.append(_alert_line(alert, open_=False))
    if view.rounds:
        lines.append(_rounds_table(view.rounds))
    if view.stats is not None:
        lines.append(_stats_text(view.stats))
    ev = view.events
    if ev.received or ev.missing:
        text = Text("last event ", style="dim")
        text.append(f"#{ev.last_seq} {ev.last_type or '?'}")
        if ev.last_detail:
            text.append(f" {ev.last_detail}")
        if ev.missing:
            text.append(f" · {ev.missing} events missing", style="bold yellow")
        if ev.out_of_order:
            text.append(f" · {ev.out_of_order} out of order", style="yellow")
        lines.append(text)
    state = view.state
    if state is not None and state.shoe_id is not None:
        shoe = Text(f"shoe {state.shoe_id}", style="dim")
        if state.cards_read is not None:
            shoe.append(f" · {state.cards_read} cards read", style="dim")
        if state.cover_seen:
            shoe.append(" · cover seen: reshuffle due", style="yellow")
        lines.append(shoe)
    if status is not None and (status.version or status.rules):
        lines.append(
            Text(
                f"rules {status.rules or '?'} · {status.decks or '?'} decks · "
                f"{status.positions or '?'} positions · version {status.version or '?'}"
                + (f" · amounts in {status.currency}" if status.currency else ""),
                style="dim",
            )
        )
    if not lines:
        lines.append(Text("nothing yet", style="dim"))
    title = Text(str(view.key), style="bold")
    title.append(" ")
    title.append_text(_link_text(view))
    if view.critical_open:
        border = "red"
    elif view.link is not Link.ONLINE:
        border = "yellow"
    else:
        border = "blue"
    return Panel(Group(*lines), title=title, title_align="left", border_style=border)


MAX_DETAIL_PANELS = 12
"""With more tables than this, only the tables that need a supervisor's eye (open
critical alerts, offline, any open alert, in that order) get a panel; every table
keeps its overview line. A full redraw of 200 panels takes seconds, and the view
must keep up with the feed."""


def _attention(view: TableView) -> tuple[int, int, int]:
    return (-view.critical_open, 0 if view.link is Link.OFFLINE else 1, -len(view.open_alerts))


def render(model: PitModel, *, max_details: int = MAX_DETAIL_PANELS) -> RenderableType:
    """The whole pit view of a model: a header, one line per table, and a panel per
    table (per table that needs attention, beyond ``max_details`` tables)."""
    tables = model.tables
    parts: list[RenderableType] = [_header(model)]
    if not tables:
        parts.append(Text(f"no table seen yet on {model.subscription}", style="dim"))
        return Group(*parts)
    parts.append(_overview(tables, model.site))
    detailed = tables
    if len(tables) > max_details:
        chosen = {id(v) for v in sorted(tables, key=_attention)[:max_details]}
        detailed = [v for v in tables if id(v) in chosen]
        parts.append(
            Text(
                f"{len(tables) - len(detailed)} of {len(tables)} tables shown by their overview "
                "line only: panels go to the tables with open alerts or offline first "
                "(--site narrows the view)",
                style="dim",
            )
        )
    parts.extend(_detail(view) for view in detailed)
    return Group(*parts)
