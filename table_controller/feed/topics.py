"""The topics of the feed, written once: names, retain flags, QoS and payload names (docs/feed.md).

Every client of the feed reads these: the table's publisher and journal, the pit
display, the recorder and the test rigs. No pydantic and nothing that opens a
connection, so a reader that only needs a topic name loads nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

CONTENT_TYPE: Final = "application/json"
DEFAULT_PREFIX: Final = "casino/{site}/table/{table}"
"""A table's topic prefix unless its config says otherwise (``mqtt.topic_prefix``)."""


class Topic(StrEnum):
    """The last topic level under a table's prefix (docs/feed.md)."""

    STATUS = "status"
    STATE = "state"
    EVENTS = "events"
    ROUNDS = "rounds"
    ALERTS = "alerts"
    STATS = "stats"
    ACK = "ack"
    REPLAY = "replay"


@dataclass(frozen=True, slots=True)
class TopicRule:
    """How a topic is published: retained or not, its QoS, its payload and who writes it."""

    retained: bool
    qos: int
    schema: str
    by_table: bool  # True: the table publishes it; False: recorders publish it to the table


# docs/feed.md, the two topic tables.
TOPIC_RULES: Final[Mapping[Topic, TopicRule]] = {
    Topic.STATUS: TopicRule(retained=True, qos=1, schema="table-status/1", by_table=True),
    Topic.STATE: TopicRule(retained=True, qos=1, schema="table-state/1", by_table=True),
    Topic.EVENTS: TopicRule(retained=False, qos=1, schema="table-event/1", by_table=True),
    Topic.ROUNDS: TopicRule(retained=False, qos=1, schema="war-round/1", by_table=True),
    Topic.ALERTS: TopicRule(retained=False, qos=1, schema="table-alert/1", by_table=True),
    Topic.STATS: TopicRule(retained=True, qos=1, schema="table-stats/1", by_table=True),
    Topic.ACK: TopicRule(retained=True, qos=1, schema="table-ack/1", by_table=False),
    Topic.REPLAY: TopicRule(retained=False, qos=1, schema="table-replay/1", by_table=False),
}

TABLE_TOPICS: Final[tuple[Topic, ...]] = tuple(t for t, r in TOPIC_RULES.items() if r.by_table)
"""The six topics a table publishes, in docs/feed.md's order."""

RETAINED_TOPICS: Final[frozenset[Topic]] = frozenset(
    t for t in TABLE_TOPICS if TOPIC_RULES[t].retained
)
"""The table's retained topics (``status``, ``state``, ``stats``): the broker keeps the last
value of each, and a zero-length retained message clears it."""


def schema_file(name: str) -> str:
    """A payload's shipped schema file: ``table-status/1`` → ``table-status-1.json``."""
    return name.replace("/", "-") + ".json"
