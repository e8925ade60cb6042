"""The publisher while the journal's disk is full (docs/rules.md ``JOURNAL_FAULT``): what the
broker acknowledged but the journal could not mark sent is not sent again and again; it is
marked once the journal commits. Against a real Mosquitto and a real full disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from table_controller.rigs.broker import MosquittoBroker
from table_controller.service.publisher_drain import BATCH
from tests.publisher_rig import (
    PREFIX,
    alert_message,
    event_message,
    relay_to,
    running_table,
    subscribed,
    watching,
)
from tests.service.journal_tables import fill


# A few, and a backlog of more than two reads of the outbox: past the first read, all of
# it acknowledged but not marked, the rest goes out all the same.
@pytest.mark.parametrize("count", [3, 2 * BATCH + 50])
async def test_acknowledged_messages_the_journal_cannot_mark_are_sent_once(
    own_mosquitto: MosquittoBroker, small_disk: Path, count: int
) -> None:
    messages = [event_message(seq) for seq in range(1, count + 1)]
    async with relay_to(own_mosquitto.port) as relay:
        relay.open = False  # the broker out of reach while they are journaled
        async with (
            running_table(small_disk / "j.sqlite3", relay.url) as table,
            subscribed(own_mosquitto.port) as sub,
        ):
            table.publish(*messages)
            filler = fill(small_disk)
            relay.open = True
            got = await sub.take_unique(len(messages))
            assert sorted(g.id for g in got) == sorted(m.id for m in messages)
            # Sent and acknowledged; the marks cannot be written, and yet the publisher rests.
            await table.drained()
            assert table.journal.outbox_depth() == len(messages)
            filler.unlink()
            # The journal commits again: the next message sent marks them all.
            later = event_message(count + 1)
            table.publish(later)
            assert (await sub.until(lambda g: g.id == later.id)).id == later.id
            await table.drained()
            assert table.journal.outbox_depth() == 0


async def test_a_refusal_the_journal_cannot_record_still_holds_the_message_back(
    tmp_path: Path, small_disk: Path
) -> None:
    acl = tmp_path / "acl"
    acl.write_text(f"topic readwrite {PREFIX}/events\ntopic read #\n", encoding="utf-8")
    broker = MosquittoBroker(extra_config=f"user root\nacl_file {acl}\n")
    with broker, watching() as log:
        async with relay_to(broker.port) as relay:
            relay.open = False
            async with running_table(
                small_disk / "j.sqlite3",
                relay.url,
                journal_kwargs={"refused_retry_base_s": 3600.0, "refused_retry_max_s": 3600.0},
            ) as table:
                table.publish(event_message(1), alert_message())
                filler = fill(small_disk)
                relay.open = True
                # Refused once, and then left to wait for its retry, not sent again at once:
                # the publisher comes to rest.
                await table.drained()
                said = [r.getMessage() for r in log.records]
                assert sum("refusal not journaled" in m for m in said) == 1
                assert table.journal.outbox_depth() == 2
                filler.unlink()
