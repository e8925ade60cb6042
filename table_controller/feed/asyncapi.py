"""The AsyncAPI 3.0 document of a table's MQTT interface, generated from the code.

One channel per topic with the topic prefix as a parameter, messages referencing
the shipped JSON Schemas; the servers (plain and TLS), the security schemes and
the three broker roles of docs/feed.md ("Who may do what on the broker").
"""

from __future__ import annotations

from typing import Any, Final

from table_controller import __version__
from table_controller.feed.topics import CONTENT_TYPE, TOPIC_RULES, Topic, schema_file

MQTT_BINDING_VERSION: Final = "0.2.0"

# Per topic: the AsyncAPI message key and what the channel carries.
_TOPICS: Final[dict[Topic, tuple[str, str]]] = {
    Topic.STATUS: (
        "tableStatus",
        "The table and its devices. Published on every connect, when a device's state "
        "changes and when the outbox figures change (at most once a second). The retained "
        "last will, and a clean shutdown, publish `online: false`. `currency` names the "
        "currency of every amount the table publishes.",
    ),
    Topic.STATE: (
        "tableState",
        "The layout now: phase, round, hold, dealer, shoe, live wagers and cards. Burn "
        "cards as a count, never a rank (9 NYCRR §5324.22(h)(1)).",
    ),
    Topic.EVENTS: (
        "tableEvent",
        "One message per event. `seq` rises by one per event and survives restarts; "
        "`epoch` is the journal's identity: a new journal, a new epoch.",
    ),
    Topic.ROUNDS: (
        "warRound",
        "The full record of one round, enough to rebuild every hand (§5324.22(i)(4)), "
        "chained by `prev_hash` and `hash` so that an altered or lost record shows. Its "
        "`net` is the players' (positive: the players won).",
    ),
    Topic.ALERTS: (
        "tableAlert",
        "An alert when raised (`resolved_by: null`) and again when resolved.",
    ),
    Topic.STATS: (
        "tableStats",
        "Counts since the journal began; drop and the house's win (positive: the house "
        "won) when amounts are known.",
    ),
    Topic.ACK: (
        "tableAck",
        "Written by a recorder, read by the table: every message of `epoch` up to "
        "`feed_seq` is committed in the recorder's database. The table may prune what is "
        "acknowledged and never prunes what is not.",
    ),
    Topic.REPLAY: (
        "tableReplay",
        "Written by a recorder, read by the table: publish `from_feed_seq` to "
        "`to_feed_seq` (inclusive, at most 10,000 messages) of `epoch` again, each with "
        "its original `id` and payload; what the table no longer holds raises "
        "`REPLAY_UNAVAILABLE`.",
    ),
}

_ROLES: Final[dict[str, str]] = {
    "table": (
        "A table's account (username = table id = client id): writes only its own six "
        "topics (`status`, `state`, `events`, `rounds`, `alerts`, `stats`; exact leaves) "
        "and reads only its own `ack` and `replay`."
    ),
    "pit": "A pit display's account: reads every topic of its site and writes nothing.",
    "recorder": (
        "A recorder's account: reads every topic of its site and writes only `ack` and "
        "`replay` of its site's tables."
    ),
}

_SERVER_TEXT: Final = (
    "The site's Mosquitto broker. Every client authenticates (no anonymous access); the "
    "client id is the username (`use_username_as_clientid`), so no account can take over "
    "another's session. A refused publish is answered with an MQTT 5 PUBACK reason code "
    "of 0x80 or above, never dropped silently."
)


def _servers() -> dict[str, Any]:
    security = [{"$ref": f"#/components/securitySchemes/{role}"} for role in _ROLES]
    host = {"host": {"default": "localhost", "description": "the broker's host name"}}
    return {
        "tls": {
            "host": "{host}:8883",
            "protocol": "secure-mqtt",
            "protocolVersion": "5",
            "description": _SERVER_TEXT
            + " TLS (`mqtts://`): the client verifies the broker's certificate and host "
            "name against the site's CA. Production uses this server.",
            "variables": host,
            "security": security,
        },
        "plain": {
            "host": "{host}:1883",
            "protocol": "mqtt",
            "protocolVersion": "5",
            "description": _SERVER_TEXT
            + " Plain TCP (`mqtt://`): for a broker on the same host, a test rig or the demo.",
            "variables": host,
            "security": security,
        },
    }


def _message(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "title": name,
        "contentType": CONTENT_TYPE,
        "payload": {"$ref": f"schemas/{schema_file(name)}"},
        "bindings": {
            "mqtt": {
                "payloadFormatIndicator": 1,
                "contentType": CONTENT_TYPE,
                "bindingVersion": MQTT_BINDING_VERSION,
            }
        },
    }


def asyncapi() -> dict[str, Any]:
    """The AsyncAPI 3.0 document of the table's MQTT interface, as the table sees it."""
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for topic, (key, text) in _TOPICS.items():
        rule = TOPIC_RULES[topic]
        messages[key] = _message(rule.schema)
        channels[topic.value] = {
            "address": f"{{prefix}}/{topic.value}",
            "description": text,
            "parameters": {"prefix": {"$ref": "#/components/parameters/prefix"}},
            "messages": {key: {"$ref": f"#/components/messages/{key}"}},
        }
        verb = "publish" if rule.by_table else "receive"
        operations[f"{verb}{key[0].upper()}{key[1:]}"] = {
            "action": "send" if rule.by_table else "receive",
            "channel": {"$ref": f"#/channels/{topic.value}"},
            "messages": [{"$ref": f"#/channels/{topic.value}/messages/{key}"}],
            "security": [{"$ref": "#/components/securitySchemes/table"}],
            "bindings": {
                "mqtt": {
                    "qos": rule.qos,
                    "retain": rule.retained,
                    "bindingVersion": MQTT_BINDING_VERSION,
                }
            },
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Casino War table controller",
            "version": __version__,
            "description": (
                "What one Casino War table publishes over MQTT 5 (JSON, UTF-8, "
                "`content-type: application/json`), and what it reads from recorders. "
                "Delivery is at least once: every message keeps its `id` when sent "
                "again, so a subscriber drops duplicates; `seq` with `epoch` on events "
                "lets it see a gap, and `feed_seq` across `events`, `rounds` and `alerts` "
                "lets a recorder see any lost message. Messages wait in the table's "
                "durable outbox while the broker is away and go out in order when it is "
                "back. Every payload carries `schema`, `id`, `table`, `site` and `ts` "
                "(RFC 3339, UTC). Amounts are integer cents of the table's `currency` "
                "(in `status`); a round's `net` is the players' and the `win` in `stats` "
                "is the house's, so they have opposite signs. docs/feed.md explains "
                "every field and alert code."
            ),
        },
        "defaultContentType": CONTENT_TYPE,
        "servers": _servers(),
        "channels": channels,
        "operations": operations,
        "components": {
            "parameters": {
                "prefix": {
                    "description": (
                        "The table's topic prefix, `mqtt.topic_prefix` of its config: by "
                        "default `casino/{site}/table/{table}`. The table id is one whole "
                        "topic level and the MQTT username, so broker rules can confine a "
                        "table to its own topics."
                    ),
                    "examples": ["casino/main-floor/table/war-07"],
                }
            },
            "securitySchemes": {
                role: {"type": "userPassword", "description": text} for role, text in _ROLES.items()
            },
            "messages": messages,
        },
    }
