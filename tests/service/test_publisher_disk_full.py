"""The publisher while the journal's disk is full (docs/rules.md ``JOURNAL_FAULT``): what the
broker acknowledged but the journal could not mark sent is not sent again and again; it is
marked once the journal commits. Against a real Mosquitto and a real full disk."""

from __future__ import annotations

from pathlib import Path

from table_controller.rigs.broker import MosquittoBroker
from tests.publisher_rig import event_message, relay_to, running_table, subscribed
from tests.service.journal_tables import fill


async def test_acknowledged_messages_the_journal_cannot_mark_are_sent_once(
    own_mosquitto: MosquittoBroker, small_disk: Path
) -> None:
    messages = [event_message(seq) for seq in range(1, 4)]
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
            later = event_message(4)
            table.publish(later)
            assert (await sub.until(lambda g: g.id == later.id)).id == later.id
            await table.drained()
            assert table.journal.outbox_depth() == 0
