"""The pit's model: every table seen under a prefix, from ``(topic, payload)`` alone.

Pure and synchronous: no I/O, no clock. A malformed or unexpected message is
counted, never raised. Duplicates (same ``id``; delivery is at least once) are
dropped and counted; on the retained topics only a repeat of the value shown now
is a duplicate, because the broker holds the last one published. Gaps in the
``events`` ``seq`` per (table, epoch) are counted, and a late event fills its
gap. Critical alerts stay open until a message for the same ``alert`` carries
``resolved_by``; warnings and info need no answer (docs/rules.md), so they are listed
as the last few notices.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace

from table_controller.feed.topics import DEFAULT_PREFIX, RETAINED_TOPICS, TABLE_TOPICS, Topic
from table_controller.pit.errors import MalformedPayload, UnexpectedMessage
from table_controller.pit.parse import (
    Event,
    check_schema,
    clean,
    decode,
    opt_ident,
    opt_str,
    parse_alert,
    parse_event,
    parse_round,
    parse_state,
    parse_stats,
    parse_status,
)
from table_controller.pit.topics import check_site, subscription_filter, topic_regex
from table_controller.pit.views import (
    AlertView,
    BrokerLink,
    ConnectionView,
    EventsView,
    StatusView,
    TableKey,
    TableView,
)

ROUNDS_KEPT = 5  # round results shown per table
NOTICES_KEPT = 5  # warnings and info alerts shown per table
MAX_OPEN_ALERTS = 256  # per table; more is abuse, not play
MAX_TABLES = 512  # a rogue publisher under the wildcard cannot grow memory without bound
SEEN_IDS_KEPT = 100_000  # ids remembered for dropping duplicates (an outbox backlog resent)
RESOLVED_ALERTS_KEPT = 1024  # per table: a raise arriving after its resolution stays closed
MISSING_SEQS_KEPT = 4096  # per epoch: missing seqs remembered so a late arrival fills its gap
EPOCHS_KEPT = 8  # per table

# What recorders send a table (`ack`, `replay`): read under the pit's wildcard, shown nowhere.
_RECORDER_TOPICS = frozenset(Topic) - frozenset(TABLE_TOPICS)


class _Epoch:
    """Sequence bookkeeping of one journal epoch of one table."""

    __slots__ = ("last", "missing")

    def __init__(self, seq: int) -> None:
        self.last = seq
        self.missing: set[int] = set()


class _Books:
    """Mutable bookkeeping behind one table's view."""

    __slots__ = ("epochs", "resolved", "shown_ids")

    def __init__(self) -> None:
        self.epochs: OrderedDict[str, _Epoch] = OrderedDict()
        self.resolved: OrderedDict[str, None] = OrderedDict()
        self.shown_ids: dict[str, str | None] = {}  # retained topic -> id of the value shown


@dataclass(slots=True)
class _Counters:
    messages: int = 0
    accepted: int = 0
    duplicates: int = 0
    malformed: int = 0
    unexpected: int = 0
    internal_errors: int = 0


class PitModel:
    """Every table seen under a prefix, built from ``(topic, payload)`` alone.

    Pure and synchronous: no I/O, no clock. ``feed`` never raises on any topic or
    payload; what it cannot use it counts (``malformed``: not valid for docs/feed.md;
    ``unexpected``: a topic, table or schema version it does not know).
    """

    def __init__(
        self,
        prefix: str = DEFAULT_PREFIX,
        site: str | None = None,
        *,
        rounds_kept: int = ROUNDS_KEPT,
        notices_kept: int = NOTICES_KEPT,
    ) -> None:
        check_site(site)
        self.prefix = prefix
        self.site = site
        self.subscription = subscription_filter(prefix, site)
        self._regex = topic_regex(prefix, site)
        self._rounds_kept = max(1, rounds_kept)
        self._notices_kept = max(1, notices_kept)
        self._tables: dict[TableKey, TableView] = {}
        self._books: dict[TableKey, _Books] = {}
        self._seen: OrderedDict[tuple[TableKey, str, str], None] = OrderedDict()
        self._counters = _Counters()
        self.connection = ConnectionView()
        self.version = 0  # +1 on every change worth redrawing

    # ---- read side

    @property
    def tables(self) -> list[TableView]:
        return [self._tables[k] for k in sorted(self._tables)]

    def table(self, table: str, site: str | None = None) -> TableView | None:
        """The view of ``table`` (of ``site``, or of the pit's site, or of any site)."""
        site = site if site is not None else self.site
        for key, view in sorted(self._tables.items()):
            if key.table == table and (site is None or key.site == site):
                return view
        return None

    @property
    def messages(self) -> int:
        return self._counters.messages

    @property
    def accepted(self) -> int:
        return self._counters.accepted

    @property
    def duplicates(self) -> int:
        return self._counters.duplicates

    @property
    def malformed(self) -> int:
        return self._counters.malformed

    @property
    def unexpected(self) -> int:
        return self._counters.unexpected

    @property
    def internal_errors(self) -> int:
        return self._counters.internal_errors

    # ---- write side

    def set_connection(self, state: BrokerLink, broker: str | None, detail: str | None) -> None:
        self.connection = ConnectionView(state, broker, clean(detail) if detail else None)
        self.version += 1

    def note_internal_error(self) -> None:
        """A message the model failed on; :func:`watch` counts it instead of dying."""
        self._counters.internal_errors += 1
        self.version += 1

    def feed(self, topic: str, payload: bytes) -> bool:
        """Take one message; True if it changed a view, False if counted and dropped."""
        c = self._counters
        c.messages += 1
        self.version += 1
        match = self._regex.fullmatch(topic)
        if match is None:
            c.unexpected += 1
            return False
        site = match.groupdict().get("site") or self.site or ""
        key = TableKey(site, match["table"])
        kind = match["kind"]
        if kind in _RECORDER_TOPICS:
            return False  # a recorder's ack or replay request: no news of the table
        view = self._tables.get(key)
        if view is None:
            if len(self._tables) >= MAX_TABLES:
                c.unexpected += 1
                return False
            view = TableView(key)
        view = replace(view, messages=view.messages + 1)
        try:
            changed = self._apply(key, view, kind, payload)
        except MalformedPayload:
            c.malformed += 1
            self._tables[key] = replace(view, malformed=view.malformed + 1)
            return False
        except UnexpectedMessage:
            c.unexpected += 1
            self._tables[key] = replace(view, unexpected=view.unexpected + 1)
            return False
        if changed is None:
            c.duplicates += 1
            self._tables[key] = replace(view, duplicates=view.duplicates + 1)
            return False
        c.accepted += 1
        self._tables[key] = changed
        return True

    def _apply(self, key: TableKey, view: TableView, kind: str, payload: bytes) -> TableView | None:
        """The table's new view, or None for a duplicate."""
        if kind not in TABLE_TOPICS:
            raise UnexpectedMessage(f"topic {kind!r}")
        if not payload and kind in RETAINED_TOPICS:
            # A zero-length retained message clears the topic (MQTT): nothing to show.
            self._books_of(key).shown_ids.pop(kind, None)
            if kind == "status":
                return replace(view, status=None)
            if kind == "state":
                return replace(view, state=None)
            return replace(view, stats=None)
        d = decode(payload)
        check_schema(d, kind)
        table, site = opt_str(d, "table"), opt_str(d, "site")
        if table is not None and table != key.table:
            raise MalformedPayload(f"payload of table {table!r} on the topic of {key.table!r}")
        if site is not None and key.site and site != key.site:
            raise MalformedPayload(f"payload of site {site!r} on the topic of {key.site!r}")
        msg_id = opt_ident(d, "id")
        # Parse everything before remembering the id, so that a bad message does not
        # make its good resend look like a duplicate.
        if kind == "status":
            status = parse_status(d)
            if not self._new_value(key, kind, msg_id):
                return None
            return _without_left_behind(replace(view, status=status), status)
        if kind == "state":
            state = parse_state(d)
            return replace(view, state=state) if self._new_value(key, kind, msg_id) else None
        if kind == "stats":
            stats = parse_stats(d)
            return replace(view, stats=stats) if self._new_value(key, kind, msg_id) else None
        if kind == "rounds":
            record = parse_round(d)
            if not self._unseen(key, kind, msg_id):
                return None
            return replace(view, rounds=(record, *view.rounds)[: self._rounds_kept])
        if kind == "alerts":
            alert, resolved_by = parse_alert(d)
            alert = replace(alert, instance=view.status.instance if view.status else None)
            if not self._unseen(key, kind, msg_id):
                return None
            return self._apply_alert(key, view, alert, resolved_by)
        event = parse_event(d)
        if not self._unseen(key, kind, msg_id):
            return None
        return replace(view, events=self._apply_event(key, view.events, event))

    def _new_value(self, key: TableKey, kind: str, msg_id: str | None) -> bool:
        """For a retained topic, only a repeat of the value shown now is a duplicate.

        The broker keeps the last message published, whatever its age: an older
        status sent again after the last will (an outbox resend) is again what the
        broker holds, and it comes from a table that is connected, so it is shown.
        """
        shown = self._books_of(key).shown_ids
        if msg_id is not None and shown.get(kind) == msg_id:
            return False
        shown[kind] = msg_id
        return True

    def _unseen(self, key: TableKey, kind: str, msg_id: str | None) -> bool:
        """True the first time an id is seen (delivery is at least once: docs/feed.md)."""
        if msg_id is None:
            return True
        mark = (key, kind, msg_id)
        if mark in self._seen:
            self._seen.move_to_end(mark)
            return False
        self._seen[mark] = None
        if len(self._seen) > SEEN_IDS_KEPT:
            self._seen.popitem(last=False)
        return True

    def _books_of(self, key: TableKey) -> _Books:
        books = self._books.get(key)
        if books is None:
            books = self._books[key] = _Books()
        return books

    def _apply_alert(
        self, key: TableKey, view: TableView, alert: AlertView, resolved_by: str | None
    ) -> TableView:
        books = self._books_of(key)
        open_alerts = [a for a in view.open_alerts if a.alert != alert.alert]
        notices = [a for a in view.notices if a.alert != alert.alert]
        if resolved_by is not None:
            # docs/feed.md: a second message for the same `alert` carries how it was resolved.
            books.resolved[alert.alert] = None
            if len(books.resolved) > RESOLVED_ALERTS_KEPT:
                books.resolved.popitem(last=False)
        elif alert.alert in books.resolved:
            return view  # a raise that arrived after its resolution stays closed
        elif alert.needs_answer:
            previous = next((a for a in view.open_alerts if a.alert == alert.alert), None)
            if previous is not None:
                # The same alert raised again keeps its place in the list.
                open_alerts = [alert if a is previous else a for a in view.open_alerts]
            elif len(open_alerts) >= MAX_OPEN_ALERTS:
                raise UnexpectedMessage("too many open alerts")
            else:
                open_alerts.append(alert)
        else:
            notices.insert(0, alert)
        return replace(
            view, open_alerts=tuple(open_alerts), notices=tuple(notices[: self._notices_kept])
        )

    def _apply_event(self, key: TableKey, events: EventsView, event: Event) -> EventsView:
        books = self._books_of(key)
        epoch = books.epochs.get(event.epoch)
        missing, out_of_order = events.missing, events.out_of_order
        latest = True
        if epoch is None:
            # The first event seen of an epoch is where this pit starts counting: a pit
            # started late, or a new journal (docs/feed.md: a new journal, a new epoch).
            books.epochs[event.epoch] = _Epoch(event.seq)
            if len(books.epochs) > EPOCHS_KEPT:
                books.epochs.popitem(last=False)
        else:
            books.epochs.move_to_end(event.epoch)
            if event.seq > epoch.last:
                skipped = event.seq - epoch.last - 1
                missing += skipped
                if skipped and len(epoch.missing) + skipped <= MISSING_SEQS_KEPT:
                    epoch.missing.update(range(epoch.last + 1, event.seq))
                epoch.last = event.seq
            elif event.seq in epoch.missing:
                epoch.missing.discard(event.seq)  # late, but it fills its gap
                missing -= 1
                latest = False
            else:
                out_of_order += 1
                latest = False
        if not latest:
            return replace(
                events, missing=missing, out_of_order=out_of_order, received=events.received + 1
            )
        return EventsView(
            epoch=event.epoch,
            last_seq=event.seq,
            last_type=event.type,
            last_round_id=event.round_id,
            last_detail=event.detail,
            missing=missing,
            out_of_order=out_of_order,
            received=events.received + 1,
        )


def _without_left_behind(view: TableView, status: StatusView) -> TableView:
    """The view without the alerts that an instance left behind when its status went.

    Alerts are not retained and an instance that is gone cannot resolve them
    (issue: an intruder's DEVICE_OFFLINE alerts stayed on the pit after it
    exited). An instance's status goes when it says ``online: false`` (its last
    will or a clean stop), or when another instance's status replaces it.
    Alerts that came before any status named an instance are kept until one
    goes offline.
    """
    if status.online is False:

        def gone(alert: AlertView) -> bool:
            return alert.instance == status.instance

    elif status.online and status.instance is not None:

        def gone(alert: AlertView) -> bool:
            return alert.instance is not None and alert.instance != status.instance

    else:
        return view
    return replace(
        view,
        open_alerts=tuple(a for a in view.open_alerts if not gone(a)),
        notices=tuple(a for a in view.notices if not gone(a)),
    )
