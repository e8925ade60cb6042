"""A broker gone quiet with a message in flight: the keepalive finds the half-open link.

The relay holds back everything the broker sends (no PINGRESP, no PUBACK), as a
broker that froze would, just as a message goes out. paho's keepalive then
closes the connection (a ping unanswered for a keepalive); the wait for that
message's PUBACK is a fallback for a broker that answers pings and never
acknowledges, and must not fire first.
"""

from __future__ import annotations

import logging
from pathlib import Path

from table_controller.rigs.broker import MosquittoBroker
from tests.publisher_rig import event_message, running_table, watching
from tests.tcp_relay import relay_to

KEEPALIVE_S = 5  # running_table's, the config's smallest
"""paho pings after a keepalive of silence and gives up a keepalive later, checking
once a second: the loss is found 10–12 s after the last bytes came."""


async def test_a_half_open_link_is_found_by_the_keepalive_not_by_a_missing_puback(
    tmp_path: Path, own_mosquitto: MosquittoBroker
) -> None:
    async with relay_to(own_mosquitto.port) as relay:
        with watching() as log:
            async with running_table(tmp_path / "j.sqlite3", relay.url) as table:
                await table.wait_connected()
                await table.drained()
                relay.replies.clear()
                table.publish(event_message(1))
                await log.wait(
                    logging.WARNING, "lost the broker connection", within=4 * KEEPALIVE_S
                )
                [lost] = log.matching(logging.WARNING, "lost the broker connection")
                assert "Keep alive timeout" in lost.getMessage(), lost.getMessage()
                relay.replies.set()
                await table.wait_connected()
                await table.drained()
                assert table.journal.outbox_depth() == 0


async def test_a_missing_puback_is_reported_as_such(
    tmp_path: Path, own_mosquitto: MosquittoBroker
) -> None:
    """Given up on after its own timeout, the connection is closed cleanly by the table:
    the warning names the missing PUBACK, not that clean DISCONNECT."""
    async with relay_to(own_mosquitto.port) as relay:
        with watching() as log:
            async with running_table(tmp_path / "j.sqlite3", relay.url, ack_timeout_s=1.0) as table:
                await table.wait_connected()
                await table.drained()
                relay.replies.clear()
                table.publish(event_message(1))
                await log.wait(logging.WARNING, "lost the broker connection", within=KEEPALIVE_S)
                [lost] = log.matching(logging.WARNING, "lost the broker connection")
                assert "no PUBACK within 1 s" in lost.getMessage(), lost.getMessage()
