"""A clean stop: SIGTERM (or SIGINT) publishes ``online: false`` and exits 0; systemd hears of it.

The service is ``table-controller run`` in a child process, as systemd runs it
(``deploy/systemd``): ``Type=notify`` wants ``READY=1`` on the ``NOTIFY_SOCKET`` datagram
socket once the service runs, and ``STOPPING=1`` when it stops.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sqlite3
from pathlib import Path

import pytest

from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import TableRig, TableSpec

# A child controller process needs time to import and connect.
STARTUP_S = 20.0
NOTIFY_BYTES = 4096


def _sent_ids(journal: Path, kind: str) -> set[str]:
    """Ids of the messages of this kind the broker acknowledged (journal, read only)."""
    db = sqlite3.connect(f"{journal.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT id FROM outbox WHERE kind = ? AND sent_at IS NOT NULL", (kind,)
        ).fetchall()
    finally:
        db.close()
    return {str(r[0]) for r in rows}


async def _notification(sock: socket.socket) -> str:
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(STARTUP_S):
        data = await loop.sock_recv(sock, NOTIFY_BYTES)
    return data.decode("ascii")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_stop_signal_publishes_offline_and_exits_0(
    own_mosquitto: MosquittoBroker, tmp_path: Path, sig: signal.Signals
) -> None:
    notify_path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(str(notify_path))
        notify.setblocking(False)
        async with TableRig(own_mosquitto.url, tmp_path, TableSpec()) as rig:
            proc = rig.start_controller_process(env={"NOTIFY_SOCKET": str(notify_path)})
            assert await _notification(notify) == "READY=1"
            await rig.wait_online(STARTUP_S)
            assert await rig.press("SHUFFLED") is None

            rig.kill_controller_process(sig)
            assert proc.returncode == 0
            assert await _notification(notify) == "STOPPING=1"
            # The journal keeps the newest status the broker acknowledged: the service's
            # own offline status, sent through its outbox at the stop.
            (final_id,) = _sent_ids(rig.journal_path, "status")
            await rig.wait(lambda o: final_id in o.ids)
            assert rig.observer is not None
            statuses = list(rig.observer.of("status"))

    final = next(s for s in statuses if s["id"] == final_id)
    assert final["online"] is False
    assert set(final["devices"]) == {"shoe", "console", "sensors"}
    # Online until the stop, offline from then on. (Besides the service's own status the
    # broker may publish the last will too: Mosquitto 2.0.x drops a connection that closes
    # with a PUBACK still owed to it as if it had failed. Both say offline.)
    first_offline = next(i for i, s in enumerate(statuses) if not s["online"])
    assert first_offline > 0
    assert all(not s["online"] for s in statuses[first_offline:])
    assert statuses[-1]["online"] is False


async def test_sigterm_without_a_broker_still_exits_0(
    own_mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    """The final status cannot go out: the service gives up after a short wait and exits."""
    async with TableRig(own_mosquitto.url, tmp_path, TableSpec()) as rig:
        proc = rig.start_controller_process()
        await rig.wait_online(STARTUP_S)
        own_mosquitto.stop()
        # kill_controller_process waits 10 s for the exit before it resorts to SIGKILL.
        rig.kill_controller_process(signal.SIGTERM)
        assert proc.returncode == 0
    log = (tmp_path / "controller.log").read_text(encoding="utf-8")
    assert "final status not acknowledged" in log
