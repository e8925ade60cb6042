"""The engine's outputs as outbox messages: envelope, topic, QoS and retain (docs/feed.md).

Ids of events, alerts and round records are derived from the journal's epoch
and the event ``seq`` (or round id), so a message built again for the same
event carries the same ``id`` and a subscriber drops the duplicate.

Every non-retained message carries ``feed_seq``: one counter per table and
epoch across ``events``, ``rounds`` and ``alerts``, +1 per message in outbox
order (docs/feed.md). The factory hands the numbers out; the runner commits them
with the input, and after a failed commit starts again from the journal's.

Events, alerts and round records are on a card's path: they are written as
JSON straight from the engine's dicts, which are already in the contract's
shape, instead of being validated again for every message (issue 12; the
tests validate what these builders write against the payload models). So are
the retained ``state`` and ``stats``, rebuilt after the inputs that arrived
together; the status goes through its model.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any, Final

from table_controller.engine import Event, EventType, RoundRecorded
from table_controller.feed.bodies import record_body
from table_controller.feed.chain import seal
from table_controller.feed.common import name_id
from table_controller.feed.payloads import TOPIC_RULES, Topic, new_id, rfc3339
from table_controller.service.config import TableConfig
from table_controller.service.envelope import Envelope
from table_controller.service.outbox import OutboxMessage

# The fields of an alert that travel in the ``events`` stream; the whole alert
# goes to ``alerts`` (docs/feed.md).
_ALERT_EVENT_FIELDS = ("alert", "code", "severity", "resolved_by")
_ALERT_FIELDS = (
    "alert",
    "code",
    "severity",
    "message",
    "round_id",
    "position",
    "spot",
    "resolved_by",
)
_ID_SPACE = uuid.UUID("6f1d3c52-8a4e-4b8e-9a57-3c1f0e2d7b90").bytes


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return rfc3339(value)
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


_ENCODE: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default
).encode


def _ms(text: str) -> str:
    """An engine time (RFC 3339, UTC, ``Z``, any fraction) as the payloads write it:
    milliseconds, as :func:`rfc3339` does."""
    head, _, frac = text[:-1].partition(".")
    return f"{head}.{frac[:3]:0<3}Z"


class MessageFactory:
    """Builds every message the table publishes; hands out ``feed_seq``."""

    def __init__(
        self,
        cfg: TableConfig,
        *,
        epoch: str,
        last_feed_seq: int = 0,
        last_hash: str | None = None,
    ) -> None:
        self.envelope = Envelope.from_config(cfg)
        self.epoch = epoch
        self.currency = cfg.table.currency
        self.rules = cfg.rules.name.value
        self.feed_seq = last_feed_seq
        # The hash of this epoch's last round record: the next one's ``prev_hash`` (docs/feed.md,
        # tamper-evident records). The runner resets it, with feed_seq, on a failed commit.
        self.prev_hash = last_hash
        self._topics = {t: self.envelope.topic(t) for t in Topic}

    def _id(self, kind: str, number: int | str) -> str:
        return name_id(_ID_SPACE, f"{self.envelope.table}/{self.epoch}/{kind}/{number}")

    def _message(
        self,
        topic: Topic,
        schema: str,
        id: str,
        ts: datetime,
        body: Mapping[str, Any],
        *,
        feed: bool,
    ) -> OutboxMessage:
        payload = {
            "schema": schema,
            "id": id,
            "table": self.envelope.table,
            "site": self.envelope.site,
            "ts": rfc3339(ts),
            **body,
        }
        feed_seq = None
        if feed:
            self.feed_seq += 1
            feed_seq = payload["feed_seq"] = self.feed_seq
            # Events and round records name their epoch in their bodies; an alert names
            # it here, so that a recorder counts its feed_seq in the right epoch.
            payload.setdefault("epoch", self.epoch)
        if topic is Topic.ROUNDS:
            # Sealed last, over the whole record with its envelope, in the transaction
            # that journals it: the table's own records are chained as it writes them.
            payload = seal(payload, self.prev_hash)
            self.prev_hash = payload["hash"]
        rule = TOPIC_RULES[topic]
        return OutboxMessage(
            id=id,
            topic=self._topics[topic],
            payload=_ENCODE(payload).encode("utf-8"),
            qos=rule.qos,
            retain=rule.retained,
            feed_seq=feed_seq,
        )

    def _feed(
        self, topic: Topic, schema: str, id: str, ts: datetime, body: Mapping[str, Any]
    ) -> OutboxMessage:
        return self._message(topic, schema, id, ts, body, feed=True)

    def event(self, event: Event) -> list[OutboxMessage]:
        """The ``events`` message, and for an alert also its ``alerts`` message."""
        data = event.data
        body: dict[str, Any] = {
            "seq": event.seq,
            "epoch": self.epoch,
            "round_id": event.round_id,
            "type": event.type.value,
        }
        eid = self._id("event", event.seq)
        if event.type == EventType.ALERT:
            body.update({k: data[k] for k in _ALERT_EVENT_FIELDS})
            alert = {k: data.get(k) for k in _ALERT_FIELDS}
            return [
                self._feed(Topic.EVENTS, "table-event/1", eid, event.at, body),
                self._feed(
                    Topic.ALERTS, "table-alert/1", self._id("alert", event.seq), event.at, alert
                ),
            ]
        body.update(data)
        return [self._feed(Topic.EVENTS, "table-event/1", eid, event.at, body)]

    def round_id(self, round_id: int) -> str:
        """The message id of round ``round_id``'s record."""
        return self._id("round", round_id)

    def round_record(self, out: RoundRecorded, *, ts: datetime) -> OutboxMessage:
        record = record_body(out.record)
        record["started"] = _ms(record["started"])
        record["ended"] = _ms(record["ended"])
        # The record names its feed and currency, and the overrides of its rules profile
        # (empty when none), so that it stands alone in an auditor's hands (docs/feed.md).
        record["epoch"] = self.epoch
        record["currency"] = self.currency
        record.setdefault("rules_overrides", {})
        return self._feed(Topic.ROUNDS, "war-round/1", self.round_id(out.round_id), ts, record)

    def state(self, view: Mapping[str, Any], *, ts: datetime) -> OutboxMessage:
        return self._message(
            Topic.STATE, "table-state/1", new_id(), ts, state_payload(view), feed=False
        )

    def stats(self, view: Mapping[str, Any], *, ts: datetime) -> OutboxMessage:
        return self._message(Topic.STATS, "table-stats/1", new_id(), ts, view, feed=False)

    def status(self, body: Mapping[str, Any], *, ts: datetime) -> OutboxMessage:
        return self.envelope.status(body, ts=ts)


def state_payload(view: Mapping[str, Any]) -> dict[str, Any]:
    """``table-state/1`` from the engine's state view.

    Only positions with chips or cards are listed; a wager is its amount in
    cents (null on a presence-only board); burn cards only as a count (§(h)(1)).
    """
    positions = []
    for pos in view["positions"]:
        wagers = {spot: live["amount"] for spot, live in pos["wagers"].items() if live["present"]}
        cards = [c["card"] for c in pos["cards"]]
        if wagers or cards:
            positions.append({"position": pos["position"], "wagers": wagers, "cards": cards})
    dealer_cards = [c for c in (view["dealer_card"], view["dealer_war_card"]) if c is not None]
    shoe = view["shoe"]
    return {
        "phase": view["phase"],
        "round_id": view["round_id"],
        "held": view["held"],
        "dealer": view["dealer"],
        "shoe": {
            "id": shoe["id"],
            "cards_read": shoe["cards_read"],
            "cover_seen": shoe["cover_seen"],
        },
        "positions": positions,
        "dealer_cards": dealer_cards,
        "burn_cards": view["burns"],
    }
