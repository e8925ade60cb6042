"""The pit display's public face, for its users in the demo and the benchmarks.

``table-controller pit --broker URL [--site S]`` subscribes, read only, to what
the tables publish (docs/feed.md) and shows per table: online or offline (the
retained ``status``, including the last will ``online: false``), device states,
outbox depth, phase, round, dealer, hold, the last round results, open alerts
and statistics. Its parts, each testable on its own:

- :mod:`.model` (:class:`PitModel`): pure; ``(topic, payload bytes)`` in, a
  read-only :class:`TableView` per table out (:mod:`.views`), parsed
  defensively (:mod:`.parse`) from the topics of :mod:`.topics`;
- :mod:`.render` (:func:`render`): a model as a ``rich`` renderable;
- :mod:`.client` (:func:`watch`): the MQTT connection and reconnect loop;
- ``table_controller.cli.pit``: the command's options.

Alerts are not retained: a pit started after an alert was raised does not see
it, though the table's retained ``state`` still shows the round ``held``.
"""

from table_controller.feed.topics import DEFAULT_PREFIX
from table_controller.pit.client import (
    KEEPALIVE_S,
    MAX_QUEUED_MESSAGES,
    BrokerSettings,
    MqttVersion,
    broker_settings,
    subscription_refusal,
    watch,
)
from table_controller.pit.errors import (
    PitConfigError,
    PitConnectError,
    PitError,
    SubscriptionRefused,
)
from table_controller.pit.model import PitModel
from table_controller.pit.render import render
from table_controller.pit.topics import subscription_filter
from table_controller.pit.views import (
    AlertView,
    BrokerLink,
    ConnectionView,
    DeviceView,
    EventsView,
    Link,
    PositionResult,
    RoundView,
    StateView,
    StatsView,
    StatusView,
    TableKey,
    TableView,
)

__all__ = [
    "DEFAULT_PREFIX",
    "KEEPALIVE_S",
    "MAX_QUEUED_MESSAGES",
    "AlertView",
    "BrokerLink",
    "BrokerSettings",
    "ConnectionView",
    "DeviceView",
    "EventsView",
    "Link",
    "MqttVersion",
    "PitConfigError",
    "PitConnectError",
    "PitError",
    "PitModel",
    "PositionResult",
    "RoundView",
    "StateView",
    "StatsView",
    "StatusView",
    "SubscriptionRefused",
    "TableKey",
    "TableView",
    "broker_settings",
    "render",
    "subscription_filter",
    "subscription_refusal",
    "watch",
]
