"""Crashes at the worst moments (issue: outage tests that could not see a crash).

- The broker is SIGKILLed in the middle of a round: no clean shutdown, no session
  saved, every connection reset; the table deals on and the rest goes out when the
  broker is back.
- The controller is SIGKILLed after the broker acknowledged the round record and
  before the outbox marked it sent (a fault point in the publisher, not a timer):
  the restarted controller sends it again, with the same id.
- The broker stops answering without closing anything (SIGSTOP): the table's MQTT
  keepalive finds the half-open connection dead, and it recovers once the broker
  answers again.

Each ends with every message of the journal's outbox at the subscriber, and no
duplicate that the subscriber could not drop by ``id``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from table_controller.rigs.broker import BrokerGate
from table_controller.rigs.rig import TableRig, TableSpec
from table_controller.service.publisher_drain import KILL_BEFORE_MARK_ENV
from tests.publisher_rig import watching
from tests.security.crash_rig import (
    CrashableBroker,
    check_nothing_lost,
    open_table,
    play_round,
    resubscribed,
)

KEEPALIVE_S = 5  # the config's smallest: the half-open test waits about 2 x this
RECOVERY_S = 60.0


@pytest.fixture
def broker() -> Iterator[CrashableBroker]:
    broker = CrashableBroker()
    broker.start()
    yield broker
    broker.close()


def _through(rig: TableRig, url: str, *, keepalive_s: int | None = None) -> None:
    """The controller's broker URL (and keepalive), the observer's left as it is."""
    assert rig.config is not None
    mqtt = rig.config.mqtt.model_copy(
        update={"url": url, "keepalive_s": keepalive_s or rig.config.mqtt.keepalive_s}
    )
    rig.config = rig.config.model_copy(update={"mqtt": mqtt})


async def _recovered_and_dealing_on(rig: TableRig, deals: list[list[str]]) -> None:
    """Rounds 1 and 2 (dealt around the fault) arrive, round 3 is dealt after it, the
    outbox empties, and nothing is lost."""
    await rig.wait_rounds(2, timeout=RECOVERY_S)
    await play_round(rig, deals[2])
    await rig.wait_rounds(3, timeout=RECOVERY_S)
    await rig.wait_status(lambda s: s["outbox"]["depth"] == 0, timeout=RECOVERY_S)
    await rig.stop_controller()
    await check_nothing_lost(rig, rounds=3)


async def test_broker_sigkill_mid_round(broker: CrashableBroker, tmp_path: Path) -> None:
    # The controller reaches the broker through a gate that the test keeps shut
    # after the kill until the observer is subscribed again: a broker killed with
    # SIGKILL forgets every session, so what came before would go to nobody.
    gate = BrokerGate(broker.url)
    await gate.open()
    rig = TableRig(broker.url, tmp_path, TableSpec(seed=1, rules="ny"))
    try:
        async with rig:
            _through(rig, gate.url)
            await rig.start_controller()
            await rig.wait_online()
            deals = await open_table(rig)

            async def kill_broker() -> None:
                # The first card is out and seen: the round is under way.
                await rig.wait(
                    lambda o: len([e for e in o.of("events") if e["type"] == "card"]) >= 2
                )
                broker.kill()
                await gate.close()

            await play_round(rig, deals[0], after_first=kill_broker)
            await play_round(rig, deals[1])  # a whole round with no broker at all
            broker.start()
            assert rig.observer is not None
            await resubscribed(rig.observer, broker.url, rig.prefix)
            await gate.open()
            await _recovered_and_dealing_on(rig, deals)
    finally:
        await gate.close()


async def test_controller_sigkill_between_puback_and_mark(
    broker: CrashableBroker, tmp_path: Path
) -> None:
    rig = TableRig(
        broker.url,
        tmp_path,
        TableSpec(seed=1, rules="ny"),
        observer_session=f"observer-{uuid.uuid4()}",
    )
    async with rig:
        proc = rig.start_controller_process(env={KILL_BEFORE_MARK_ENV: "rounds"})
        await rig.wait_online()
        deals = await open_table(rig)
        await play_round(rig, deals[0])
        # The fault point fires once the broker acknowledged round 1's record.
        code = await asyncio.to_thread(proc.wait, RECOVERY_S)
        assert code == -signal.SIGKILL
        [record] = await rig.wait_rounds(1)
        rig.start_controller_process()
        await rig.wait_status(
            lambda s: s["online"] and s["outbox"]["depth"] == 0, timeout=RECOVERY_S
        )
        await play_round(rig, deals[1])
        await rig.wait_rounds(2, timeout=RECOVERY_S)
        await rig.wait_status(lambda s: s["outbox"]["depth"] == 0, timeout=RECOVERY_S)
        rig.kill_controller_process(signal.SIGTERM)
        seen = await check_nothing_lost(rig, rounds=2)
    # Round 1's record was delivered, then sent again under its own id and dropped.
    assert seen["duplicates"] >= 1
    assert rig.observer is not None
    assert rig.observer.of("rounds")[0]["id"] == record["id"]


async def test_half_open_connection_found_by_keepalive(
    broker: CrashableBroker, tmp_path: Path
) -> None:
    rig = TableRig(broker.url, tmp_path, TableSpec(seed=4, rules="ny"))
    async with rig:
        _through(rig, broker.url, keepalive_s=KEEPALIVE_S)
        with watching() as log:
            await rig.start_controller()
            await rig.wait_online()
            deals = await open_table(rig)
            await play_round(rig, deals[0])
            await rig.wait_rounds(1)
            # The broker stops answering and closes nothing: the connection is half-open.
            broker.signal(signal.SIGSTOP)
            try:
                # The keepalive finds it 2-3 keepalives after the last bytes came: longer
                # than the log watch's own default wait.
                await log.wait(logging.WARNING, "lost the broker connection", within=RECOVERY_S)
                # Dealt while the broker is frozen: it waits in the outbox.
                await play_round(rig, deals[1])
            finally:
                broker.signal(signal.SIGCONT)
            [lost] = log.matching(logging.WARNING, "lost the broker connection")
            assert "Keep alive timeout" in lost.getMessage(), lost.getMessage()
            await _recovered_and_dealing_on(rig, deals)
