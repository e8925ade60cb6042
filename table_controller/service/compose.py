"""The table wired together: runner, publisher and inbox, as ``run`` builds it.

One composition for the service and for the benchmarks that measure it
(``bench/tables.py``), so that what is measured is what runs on the floor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from table_controller.engine import PublishRefused
from table_controller.service.config import TableConfig
from table_controller.service.inbox import Inbox
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.publisher import Publisher
from table_controller.service.runner import TableRunner


def client_id(cfg: TableConfig) -> str:
    """The MQTT client id: table and site, so that two tables with the same id at different
    sites never take each other's session (docs/feed.md, one controller per table)."""
    return f"{cfg.table.id}@{cfg.table.site}"


@dataclass
class Table:
    runner: TableRunner
    publisher: Publisher
    inbox: Inbox


def compose(
    cfg: TableConfig,
    journal: Journal,
    *,
    on_connect: Callable[[], None] | None = None,
    on_yield: Callable[[str], None] = lambda detail: None,
    on_identity_conflict: Callable[[str], None] = lambda detail: None,
    runner_options: dict[str, Any] | None = None,
    publisher_options: dict[str, Any] | None = None,
) -> Table:
    """The runner on ``journal``, its publisher and its inbox, wired to each other."""
    runner = TableRunner(cfg, journal, **(runner_options or {}))
    inbox_ref: list[Inbox] = []

    def will() -> OutboxMessage:
        return runner.status_message(online=False)

    def refused(msg: OutboxMessage, reason_code: int) -> None:
        runner.handle(
            PublishRefused(
                at=runner.clock(), topic=msg.topic, reason_code=reason_code, message_id=msg.id
            )
        )

    publisher = Publisher(
        cfg.mqtt,
        client_id=client_id(cfg),
        journal=journal,
        will=will,
        on_connect=on_connect or runner.on_broker_connect,
        on_refused=refused,
        on_identity_conflict=on_identity_conflict,
        subscriptions=(),
        on_message=lambda topic, payload: inbox_ref[0].handle(topic, payload),
        **(publisher_options or {}),
    )
    inbox = Inbox(
        runner,
        republish=publisher.offer,
        on_yield=on_yield,
        on_rival_yields=publisher.reconnect_now,
    )
    inbox_ref.append(inbox)
    publisher.subscribe(inbox.topics)
    runner.wake_publisher = publisher.wake
    runner.publish_journaled = publisher.publish_now
    runner.publish_unjournaled = publisher.offer
    runner.publish_view = publisher.show
    return Table(runner, publisher, inbox)
