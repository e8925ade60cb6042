"""Who publishes: the table, its site and its topic prefix; builds outbox messages.

Kept apart from the payload models because it makes the service's
:class:`~table_controller.service.journal.OutboxMessage`: a reader of the feed (pit,
recorder) needs the models, never this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from table_controller.feed.alerts import TableAlert, TableStats
from table_controller.feed.common import Payload, new_id, utc_ms
from table_controller.feed.errors import EnvelopeMismatch
from table_controller.feed.events import TABLE_EVENT
from table_controller.feed.records import WarRound
from table_controller.feed.status import TableState, TableStatus
from table_controller.feed.topics import TOPIC_RULES, Topic
from table_controller.service.outbox import OutboxMessage

if TYPE_CHECKING:
    from table_controller.service.config import TableConfig


@dataclass(frozen=True, slots=True)
class Envelope:
    """Each builder takes the payload's own fields (as the engine returns them),
    adds the envelope, validates the whole against its model and returns the
    :class:`OutboxMessage` with the topic's QoS and retain flag (docs/feed.md).
    """

    table: str
    site: str
    prefix: str

    @classmethod
    def from_config(cls, cfg: TableConfig) -> Envelope:
        return cls(table=cfg.table.id, site=cfg.table.site, prefix=cfg.topic_prefix)

    def topic(self, topic: Topic) -> str:
        return f"{self.prefix}/{topic.value}"

    def fields(self, *, ts: datetime, id: str | None = None) -> dict[str, Any]:
        """The envelope keys except ``schema``: ``id``, ``table``, ``site``, ``ts``."""
        return {"id": id or new_id(), "table": self.table, "site": self.site, "ts": ts}

    def message(self, payload: Payload) -> OutboxMessage:
        """A validated payload as an outbox message on its topic."""
        if payload.table != self.table or payload.site != self.site:
            raise EnvelopeMismatch(
                f"payload of table {payload.table!r} at {payload.site!r} published as "
                f"{self.table!r} at {self.site!r}"
            )
        rule = TOPIC_RULES[payload.TOPIC]
        return OutboxMessage(
            id=payload.id,
            topic=self.topic(payload.TOPIC),
            payload=payload.to_json(),
            qos=rule.qos,
            retain=rule.retained,
        )

    def _build(
        self, model: type[Payload], body: Mapping[str, Any], ts: datetime, id: str | None
    ) -> OutboxMessage:
        return self.message(model.model_validate({**body, **self.fields(ts=ts, id=id)}))

    def status(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableStatus, body, ts, id)

    def state(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableState, body, ts, id)

    def round_record(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(WarRound, body, ts, id)

    def alert(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableAlert, body, ts, id)

    def stats(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        return self._build(TableStats, body, ts, id)

    def event(
        self, body: Mapping[str, Any], *, ts: datetime, id: str | None = None
    ) -> OutboxMessage:
        """``body`` holds ``seq``, ``epoch``, ``round_id``, ``type`` and the type's fields."""
        event = TABLE_EVENT.validate_python({**body, **self.fields(ts=ts, id=id)})
        return self.message(event)

    def last_will(self, status: TableStatus, *, ts: datetime) -> OutboxMessage:
        """The retained last will: this status with ``online: false``, a new id, ``ts``."""
        will = status.model_copy(update={"online": False, "id": new_id(), "ts": utc_ms(ts)})
        return self.message(TableStatus.model_validate(will.model_dump()))
