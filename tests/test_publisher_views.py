"""The publisher's retained views against a real Mosquitto: held in memory, not
journaled, only the latest one sent, after the journal's messages, and sent again after
a broken connection."""

from __future__ import annotations

import socket
from pathlib import Path

from table_controller.rigs.broker import MosquittoBroker
from tests.publisher_rig import event_message, running_table, state_message, subscribed


async def test_a_view_goes_from_memory_after_the_journal_and_only_its_latest(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """The retained views are not journaled: the latest one shown goes out, after the
    journal's messages (a state shows what the events before it say)."""
    async with (
        subscribed(mosquitto.port) as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        await table.wait_connected()
        await table.drained()
        older, latest, event = state_message(5), state_message(6), event_message(1)
        # All in one step of the event loop, as an input and the views after it.
        table.publisher.show(older)
        table.publisher.show(latest)
        table.publish(event)
        got = await sub.take(2)
        await table.drained()
        assert [g.id for g in got] == [event.id, latest.id]
        assert table.journal.outbox_depth() == 0
        assert table.journal.pending(100) == []
        kinds = {row[0] for row in table.journal._db.execute("SELECT kind FROM outbox")}
        assert kinds == {"events"}


async def test_a_view_acknowledged_writes_nothing_to_the_journal(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """A view has no row in the outbox: its PUBACK opens no transaction (one per input
    was a transaction for nothing)."""
    async with (
        subscribed(mosquitto.port) as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        await table.wait_connected()
        await table.drained()
        statements: list[str] = []
        table.journal._db.set_trace_callback(statements.append)
        view = state_message(7)
        table.publisher.show(view)
        got = await sub.take(1)
        await table.drained()
        table.journal._db.set_trace_callback(None)
        assert [g.id for g in got] == [view.id]
        writes = [s for s in statements if s.split()[0].upper() in {"BEGIN", "UPDATE", "INSERT"}]
        assert writes == []


async def test_a_view_in_flight_when_the_connection_breaks_goes_again(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """A view is held in memory only: sent into a broken connection, it is sent again
    on the next one (and the break is a lost connection, not a refusal)."""
    async with (
        subscribed(mosquitto.port) as sub,
        running_table(tmp_path / "j.sqlite3", mosquitto.url) as table,
    ):
        await table.wait_connected()
        await table.drained()
        connection = table.publisher._client
        assert connection is not None
        sock = connection._client.socket()
        assert isinstance(sock, socket.socket)
        table.connected.clear()
        # In one step of the event loop: the connection breaks, then a view is shown;
        # the drain writes it into the broken socket before the loop notices.
        sock.shutdown(socket.SHUT_RDWR)
        view = state_message(7)
        table.publisher.show(view)
        await table.wait_connected()
        got = await sub.until(lambda r: r.id == view.id)
        assert got.payload == view.payload
        assert table.refused == []
