"""A table dealing against a broker that the crash tests kill, freeze or cut off.

The table is the production service with simulated devices (``TableRig``); its
broker is a real mosquitto that a test may SIGKILL, SIGSTOP and SIGCONT. The end
of every test is the same check: every message the journal's outbox ever held
reached the subscriber, and anything that came twice carried the same ``id``,
so the subscriber dropped it (docs/feed.md: at least once, duplicates dropped by id).
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import aiomqtt

from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import Observer, TableRig
from tests.service.test_broker_outage import INITIAL, POSITIONS, TIE, _journal_ids, _rank

PROBE_WAIT_S = 0.5
PROBE_TRIES = 40


class CrashableBroker(MosquittoBroker):
    """A mosquitto that a test can signal: SIGKILL, SIGSTOP, SIGCONT."""

    def signal(self, sig: signal.Signals) -> None:
        proc = self._proc
        assert proc is not None, "the broker was never started"
        assert proc.poll() is None, "the broker is not running"
        proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, no session saved, every socket reset."""
        proc = self._proc
        self.signal(signal.SIGKILL)
        assert proc is not None
        proc.wait(timeout=10)


async def open_table(rig: TableRig) -> list[list[str]]:
    """Shuffle, seat a dealer, bet on POSITIONS and burn: the rounds' cards, in order."""
    order = [str(c) for c in rig.shoe.order if c is not None]
    assert await rig.press("SHUFFLED") is None
    assert await rig.press("DEALER", "D-1") is None
    for p in POSITIONS:
        rig.bet(p, initial=INITIAL, tie=TIE)
    await rig.wait_wagers({p: {"initial": INITIAL, "tie": TIE} for p in POSITIONS})
    rig.shoe.draw()  # the burn card (§(h)(1))
    per_round = len(POSITIONS) + 1
    return [order[1 + per_round * r : 1 + per_round * (r + 1)] for r in range(20)]


async def resubscribed(observer: Observer, broker_url: str, prefix: str) -> None:
    """Until the observer is subscribed again after a broker restart.

    A probe under the table's prefix is published until the observer has it: a
    broker that lost its sessions (SIGKILL) knows the subscription only once the
    observer has reconnected, and there is no event for that.
    """
    host, port = broker_url.removeprefix("mqtt://").rsplit(":", 1)
    probe = f"probe-{uuid.uuid4().hex}"
    async with aiomqtt.Client(host, int(port), protocol=aiomqtt.ProtocolVersion.V5) as client:
        for _ in range(PROBE_TRIES):
            await client.publish(f"{prefix}/probe", f'{{"id": "{probe}"}}', qos=1)
            try:
                await observer.wait(lambda o: probe in o.ids, timeout=PROBE_WAIT_S)
            except TimeoutError:
                continue
            return
    raise AssertionError(f"the observer did not subscribe again; {observer.summary()}")


async def check_nothing_lost(rig: TableRig, rounds: int) -> dict[str, Any]:
    """Every outbox message seen, each event seq once, each round once; what was seen.

    Call with the controller stopped: what it sent last may still be on its way.
    """
    obs = rig.observer
    assert obs is not None
    journal = _journal_ids(rig.journal_path)
    try:
        await obs.wait(lambda o: set(journal) <= o.ids)
    except TimeoutError:
        missing = set(journal) - obs.ids
        raise AssertionError(f"lost: {sorted(journal[m] for m in missing)}") from None
    events = obs.of("events")
    seqs = [(e["epoch"], e["seq"]) for e in events]
    # A duplicate the subscriber could not drop by id would show as a seq seen twice.
    assert len(seqs) == len(set(seqs))
    assert sorted(e["seq"] for e in events) == list(range(1, len(events) + 1))
    assert [r["round_id"] for r in obs.of("rounds")] == list(range(1, rounds + 1))
    kinds = list(journal.values())
    assert kinds.count("rounds") == rounds
    return {"duplicates": obs.duplicates, "messages": len(journal)}


async def play_round(
    rig: TableRig,
    cards: list[str],
    *,
    after_first: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Deal one round; ``after_first`` runs once the first card is out (mid-round).

    Each tie is answered with SURRENDER once the console shows the question (§(i));
    the waiters listen before any card goes out, so no question is missed.
    """
    tied = [p for p, card in zip(POSITIONS, cards, strict=False) if _rank(card) == _rank(cards[-1])]
    shown = [rig.console.expect_shown(f"P{p} TIE: WAR OR SURRENDER") for p in tied]
    try:
        rig.shoe.draw()
        if after_first is not None:
            await after_first()
        for _ in cards[1:]:
            rig.shoe.draw()
        async with asyncio.timeout(10):
            await asyncio.gather(*shown)
    finally:
        for waiter in shown:
            waiter.cancel()
    for p in tied:
        assert await rig.press("SURRENDER", p) is None
