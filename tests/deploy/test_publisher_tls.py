"""The table's own publisher against the pit broker as deployed: mqtts:// with
the pit CA, the table id as username and the secret written by
provision-table.sh; a refusal, a secret file others could read, a broker with
the wrong certificate and a table id configured twice."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from table_controller.service.config import MqttSection
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.publisher import Publisher, PublisherConfigError
from tests.deploy.mqtt_clients import NOT_AUTHORIZED, MqttClient
from tests.deploy.pit_setup import PitBroker, topic

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 15.0
# Long enough that a publisher which reported a conflict is seen waiting, not retrying.
CONFLICT_RETRY_S = 3600.0


def _settings(pit: PitBroker, table_id: str, *, password_file: Path | None = None) -> MqttSection:
    return MqttSection(
        url=pit.url,
        protocol="5",
        ca_file=pit.ca.ca_file,
        username=table_id,
        password_file=password_file or pit.accounts[table_id].secret_file,
    )


def _message(table_id: str, leaf: str = "events", *, retain: bool = False) -> OutboxMessage:
    msg_id = uuid.uuid4().hex
    return OutboxMessage(
        id=msg_id,
        topic=topic(table_id, leaf),
        payload=f'{{"id": "{msg_id}", "table": "{table_id}"}}'.encode(),
        qos=1,
        retain=retain,
    )


def _will(table_id: str) -> Callable[[], OutboxMessage]:
    def build() -> OutboxMessage:
        return OutboxMessage(
            id=uuid.uuid4().hex,
            topic=topic(table_id, "status"),
            payload=b'{"online": false}',
            qos=1,
            retain=True,
        )

    return build


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = Journal(tmp_path / "journal.sqlite3")
    yield j
    j.close()


@asynccontextmanager
async def _running(publisher: Publisher) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(publisher.run(), name=f"publisher-{publisher.client_id}")
    try:
        yield task
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_publisher_publishes_over_mqtts_as_its_table(
    pit: PitBroker, journal: Journal
) -> None:
    msg = _message("war-07")
    with MqttClient(pit, "pit-1", client_id=uuid.uuid4().hex) as display:
        display.subscribe(topic("war-07", "events"))
        journal.enqueue([msg])
        publisher = Publisher(
            _settings(pit, "war-07"), client_id="war-07", journal=journal, will=_will("war-07")
        )
        async with _running(publisher):
            async with asyncio.timeout(WAIT_S):
                await publisher.drained()
            got = await asyncio.to_thread(display.next_message)
    assert (got.topic, got.payload) == (msg.topic, msg.payload)
    assert got.properties is not None
    assert got.properties.ContentType == "application/json"  # type: ignore[attr-defined]
    assert journal.outbox_depth() == 0


async def test_publisher_sees_the_broker_refuse_another_tables_topic(
    pit: PitBroker, journal: Journal
) -> None:
    intrusion = _message("war-08")  # war-07's credentials, war-08's prefix
    own = _message("war-07")
    refused: list[tuple[str, int]] = []
    journal.enqueue([intrusion, own])
    publisher = Publisher(
        _settings(pit, "war-07"),
        client_id="war-07",
        journal=journal,
        will=_will("war-07"),
        on_refused=lambda m, code: refused.append((m.id, code)),
    )
    async with _running(publisher):
        async with asyncio.timeout(WAIT_S):
            await publisher.drained()
    assert refused == [(intrusion.id, NOT_AUTHORIZED)]
    # docs/feed.md: the refused message stays in the outbox; the table's own went out.
    assert journal.outbox_depth() == 1
    assert [(r.message.id, r.reason_code) for r in journal.refusals()] == [
        (intrusion.id, NOT_AUTHORIZED)
    ]


async def test_publisher_refuses_a_secret_file_others_can_read(
    pit: PitBroker, journal: Journal, tmp_path: Path
) -> None:
    exposed = tmp_path / "mqtt.secret"
    shutil.copyfile(pit.accounts["war-07"].secret_file, exposed)
    exposed.chmod(0o644)
    with pytest.raises(PublisherConfigError, match=f"{exposed} is readable by others"):
        Publisher(
            _settings(pit, "war-07", password_file=exposed),
            client_id="war-07",
            journal=journal,
            will=_will("war-07"),
        )
    # The same file made private, as provision-table.sh writes it, is taken.
    exposed.chmod(0o600)
    Publisher(
        _settings(pit, "war-07", password_file=exposed),
        client_id="war-07",
        journal=journal,
        will=_will("war-07"),
    )


async def test_publisher_refuses_a_broker_certificate_for_another_host(
    wrong_host_pit: PitBroker, tmp_path: Path
) -> None:
    # In a child process: paho-mqtt 2.2's Client._create_socket does not close
    # the TCP socket when the TLS handshake raises, and the socket lives on in
    # the logged exception's frames until the garbage collector warns about it.
    # The refusal is right; the stray socket must not trip this process's leak
    # guard.
    proc = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "tests.deploy.publisher_probe",
            wrong_host_pit.url,
            str(wrong_host_pit.ca.ca_file),
            "war-07",
            str(wrong_host_pit.accounts["war-07"].secret_file),
            str(tmp_path / "journal.sqlite3"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout.splitlines()[-1])
    assert outcome["connects"] == 0
    assert not outcome["connected"]
    assert "cannot connect" in outcome["warning"]
    assert "certificate verify failed" in outcome["warning"]
    assert "mismatch" in outcome["warning"]


async def test_duplicate_table_identity_is_reported_once_and_not_fought_over(
    pit: PitBroker, tmp_path: Path
) -> None:
    """Two table PCs configured as war-07: one reports the conflict once and
    backs off for the long interval; the other keeps the session and publishes."""
    journals = [Journal(tmp_path / f"pc-{n}.sqlite3") for n in (1, 2)]
    conflicts: list[list[str]] = [[], []]
    reported = asyncio.Event()

    def on_conflict(n: int) -> Callable[[str], None]:
        def note(detail: str) -> None:
            conflicts[n].append(detail)
            reported.set()

        return note

    publishers = [
        Publisher(
            _settings(pit, "war-07"),
            client_id="war-07",
            journal=journals[n],
            will=_will("war-07"),
            on_identity_conflict=on_conflict(n),
            retry_initial_s=0.05,
            retry_max_s=0.2,
            identity_conflict_retry_s=CONFLICT_RETRY_S,
        )
        for n in (0, 1)
    ]
    try:
        async with _running(publishers[0]):
            async with asyncio.timeout(WAIT_S):
                await publishers[0].drained()
            async with _running(publishers[1]):
                async with asyncio.timeout(WAIT_S):
                    await reported.wait()
                loser = 0 if conflicts[0] else 1
                winner = publishers[1 - loser]
                assert len(conflicts[loser]) == 1
                assert "war-07" in conflicts[loser][0]
                assert publishers[loser].identity_conflict
                # Waiting the long interval, not retrying: no fight for the session.
                assert publishers[loser].retry_delay_s >= 0.9 * CONFLICT_RETRY_S
                assert not publishers[loser].connected
                # The other keeps the session and publishes as war-07.
                msg = _message("war-07")
                with MqttClient(pit, "pit-1", client_id=uuid.uuid4().hex) as display:
                    display.subscribe(topic("war-07", "events"))
                    journals[1 - loser].enqueue([msg])
                    winner.wake()
                    async with asyncio.timeout(WAIT_S):
                        await winner.drained()
                    got = await asyncio.to_thread(display.next_message)
                assert got.payload == msg.payload
                assert conflicts[1 - loser] == []
    finally:
        for j in journals:
            j.close()
