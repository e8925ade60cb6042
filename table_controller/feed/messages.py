"""The engine's outputs as outbox messages: envelope, topic, QoS and retain (MQTT.md).

Ids of events, alerts and round records are derived from the journal's epoch
and the event ``seq`` (or round id), so a message built again for the same
event carries the same ``id`` and a subscriber drops the duplicate.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from table_controller.engine import Event, EventType, RoundRecorded
from table_controller.feed.payloads import Envelope
from table_controller.feed.records import record_body
from table_controller.service.config import TableConfig
from table_controller.service.journal import OutboxMessage

# The fields of an alert that travel in the ``events`` stream; the whole alert
# goes to ``alerts`` (MQTT.md).
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
_ID_SPACE = uuid.UUID("6f1d3c52-8a4e-4b8e-9a57-3c1f0e2d7b90")


class MessageFactory:
    """Builds every message the table publishes, validated against its payload model."""

    def __init__(self, cfg: TableConfig, *, epoch: str) -> None:
        self.envelope = Envelope.from_config(cfg)
        self.epoch = epoch
        self.rules = cfg.rules.name.value

    def _id(self, kind: str, number: int) -> str:
        return str(uuid.uuid5(_ID_SPACE, f"{self.envelope.table}/{self.epoch}/{kind}/{number}"))

    def event(self, event: Event) -> list[OutboxMessage]:
        """The ``events`` message, and for an alert also its ``alerts`` message."""
        data = dict(event.data)
        body: dict[str, Any] = {
            "seq": event.seq,
            "epoch": self.epoch,
            "round_id": event.round_id,
            "type": event.type.value,
        }
        if event.type == EventType.ALERT:
            body.update({k: data[k] for k in _ALERT_EVENT_FIELDS})
            alert = {k: data.get(k) for k in _ALERT_FIELDS}
            return [
                self.envelope.event(body, ts=event.at, id=self._id("event", event.seq)),
                self.envelope.alert(alert, ts=event.at, id=self._id("alert", event.seq)),
            ]
        body.update(data)
        return [self.envelope.event(body, ts=event.at, id=self._id("event", event.seq))]

    def round_record(self, out: RoundRecorded, *, ts: datetime) -> OutboxMessage:
        body = record_body(out.record)
        return self.envelope.round_record(body, ts=ts, id=self._id("round", out.round_id))

    def state(self, view: Mapping[str, Any], *, ts: datetime) -> OutboxMessage:
        return self.envelope.state(state_payload(view), ts=ts)

    def stats(self, view: Mapping[str, Any], *, ts: datetime) -> OutboxMessage:
        return self.envelope.stats(view, ts=ts)

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
