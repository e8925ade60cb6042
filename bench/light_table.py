"""A light table: a real MQTT 5 peer that publishes the feed as ``docs/feed.md`` says a table does.

No engine, no devices, no journal: rounds of one deck's random cards on a few
positions, settled at even money (a tie surrendered, half the wager lost),
published as ``events`` and ``rounds`` messages that validate against the
feed's models, each with ``feed_seq`` (+1 per message across ``events``,
``rounds``, ``alerts``) and, but for an alert, ``epoch``. It holds every message until an ``ack``
covers it, answers a ``replay`` by publishing the range again in order with
the original ids, and raises ``REPLAY_UNAVAILABLE`` for what it no longer
holds. Its retained ``status`` carries ``feed: {epoch, last_feed_seq}``.

Used by the recorder's tests (as the peer a recorder talks to) and by
``bench/recorder.py`` (many of them on one broker).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import aiomqtt

from table_controller.feed.payloads import rfc3339

RANKS: Final = "23456789TJQKA"
SUITS: Final = "CDHS"
WAGER_CENTS: Final = (500, 1000, 2500)
SEND_WINDOW: Final = 10


class LightTable:
    """One table's feed over its own MQTT connection (client id = table id)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        site: str = "main-floor",
        table: str = "war-01",
        epoch: str | None = None,
        positions: int = 3,
        seed: int = 0,
        drop: frozenset[int] = frozenset(),
    ) -> None:
        self.host, self.port, self.site, self.table = host, port, site, table
        self.epoch = epoch or str(uuid.uuid4())
        self.prefix = f"casino/{site}/table/{table}"
        self.positions = positions
        self.rng = random.Random(seed)
        self.drop = set(drop)  # feed_seqs not sent the first time: a lost message
        self.held: dict[int, tuple[str, bytes]] = {}
        self.sent: set[int] = set()  # acknowledged by the broker (PUBACK)
        self.ids: dict[int, str] = {}  # every feed_seq published, with its id
        self.last_feed_seq = 0
        self.round_id = 0
        self.event_seq = 0
        self.acked = 0
        self.acked_event = asyncio.Event()
        self.sent_event = asyncio.Event()
        self.replays: list[tuple[int, int]] = []
        self.rounds: list[dict[str, Any]] = []
        self._last_end = datetime.min.replace(tzinfo=UTC)
        self._queue: asyncio.Queue[int] = asyncio.Queue()
        self._client: aiomqtt.Client | None = None
        self._connected = asyncio.Event()

    # -- the feed ------------------------------------------------------------------

    def _envelope(self, schema: str, at: datetime, id: str | None = None) -> dict[str, Any]:
        return {
            "schema": schema,
            "id": id or str(uuid.uuid4()),
            "table": self.table,
            "site": self.site,
            "ts": rfc3339(at),
        }

    def _enqueue(self, leaf: str, body: dict[str, Any]) -> int:
        self.last_feed_seq += 1
        seq = self.last_feed_seq
        body |= {"feed_seq": seq}
        if leaf != "alerts":
            # As the table's feed: an alert carries no epoch; its status announces it.
            body["epoch"] = self.epoch
        self.held[seq] = (f"{self.prefix}/{leaf}", json.dumps(body).encode())
        self.ids[seq] = body["id"]
        if seq in self.drop:
            self.drop.discard(seq)
            self.sent.add(seq)  # as if the broker had acknowledged it and then lost it
        else:
            self._queue.put_nowait(seq)
        return seq

    def _event(self, kind: str, at: datetime, **fields: Any) -> None:
        self.event_seq += 1
        body = self._envelope("table-event/1", at) | {
            "seq": self.event_seq,
            "round_id": self.round_id,
            "type": kind,
        }
        self._enqueue("events", body | fields)

    def deal_round(self) -> dict[str, Any]:
        """One settled round: its events and its record, enqueued in order."""
        self.round_id += 1
        # Times at millisecond resolution, as published, strictly after the last round's.
        started = max(datetime.now(UTC), self._last_end + timedelta(milliseconds=1))
        at = started
        deck = [r + s for r in RANKS for s in SUITS]
        self.rng.shuffle(deck)
        playing = list(range(1, self.positions + 1))
        self._event("bets_closed", at, by="no_more_bets", positions=playing)
        cards: list[dict[str, Any]] = []

        def take(role: str, position: int | None) -> str:
            card = deck.pop()
            cards.append(
                {"n": len(cards) + 1, "card": card, "role": role, "position": position}
                | {"source": "shoe"}
            )
            shown = None if role == "burn" else card
            self._event(
                "card", at, n=len(cards), card=shown, role=role, position=position, source="shoe"
            )
            return card

        take("burn", None)
        hands = {p: take("position", p) for p in playing}
        dealer = take("dealer", None)
        records, net = [], 0
        for p, card in hands.items():
            amount = self.rng.choice(WAGER_CENTS)
            diff = RANKS.index(card[0]) - RANKS.index(dealer[0])
            outcome = "win" if diff > 0 else "lose" if diff < 0 else "tie"
            decision = "surrender" if outcome == "tie" else None
            if decision:
                self._event("decision", at, position=p, decision=decision)
            result, per_unit = {"win": ("win", 1), "lose": ("lose", -1)}.get(
                outcome, ("surrender", -0.5)
            )
            wager_net = int(amount * per_unit)
            net += wager_net
            wager = {"spot": "initial", "amount": amount, "odds": "1:1", "result": result}
            records.append(
                {"position": p, "card": card, "outcome": outcome, "decision": decision}
                | {"war_card": None, "war_outcome": None, "net": wager_net}
                | {"wagers": [wager | {"net_per_unit": per_unit, "net": wager_net}]}
            )
        ended = started + timedelta(milliseconds=1)
        self._last_end = ended
        self._event("round_settled", ended, net=net)
        record = self._envelope("war-round/1", ended) | {
            "round_id": self.round_id,
            "shoe_id": "S-1",
            "dealer": "D-1",
            "rules": "standard",
            "started": rfc3339(started),
            "ended": rfc3339(ended),
            "void": False,
            "void_reason": None,
            "cards": cards,
            "dealer_card": dealer,
            "dealer_war_card": None,
            "positions": records,
            "net": net,
            "alerts": [],
        }
        self._enqueue("rounds", dict(record))
        self.rounds.append(record | {"epoch": self.epoch})
        return record

    def forget(self, first: int, last: int) -> None:
        """Stop holding ``first..last`` (as after a prune, or a journal restored from backup)."""
        for seq in range(first, last + 1):
            self.held.pop(seq, None)

    def status(self, *, online: bool = True) -> bytes:
        device = {"state": "ok", "detail": None}
        body = self._envelope("table-status/1", datetime.now(UTC)) | {
            "online": online,
            "version": "light",
            "rules": "standard",
            "decks": 1,
            "positions": self.positions,
            "devices": {"shoe": device, "sensors": device, "console": device},
            "outbox": {"depth": len(self.held), "oldest_age_s": None},
            "feed": {"epoch": self.epoch, "last_feed_seq": self.last_feed_seq},
        }
        return json.dumps(body).encode()

    # -- acks and replays ------------------------------------------------------------

    def _on_ack(self, body: dict[str, Any]) -> None:
        if body.get("epoch") != self.epoch or type(body.get("feed_seq")) is not int:
            return
        self.acked = max(self.acked, body["feed_seq"])
        self.acked_event.set()

    def _on_replay(self, body: dict[str, Any]) -> None:
        if (body.get("table"), body.get("site"), body.get("epoch")) != (
            self.table,
            self.site,
            self.epoch,
        ):
            return
        first, last = body["from_feed_seq"], body["to_feed_seq"]
        self.replays.append((first, last))
        missing = [s for s in range(first, last + 1) if s not in self.held]
        for seq in range(first, last + 1):
            if seq in self.held:
                self._queue.put_nowait(seq)
        if missing:
            at = datetime.now(UTC)
            alert = self._envelope("table-alert/1", at) | {
                "alert": str(uuid.uuid4()),
                "code": "REPLAY_UNAVAILABLE",
                "severity": "warning",
                "message": f"{body.get('recorder')} asked for feed_seq {_runs(missing)}: "
                "no longer held by the table",
                "round_id": None,
                "position": None,
                "spot": None,
                "resolved_by": None,
            }
            self._enqueue("alerts", alert)

    async def wait_sent(self, timeout: float) -> None:
        """Until the broker has acknowledged every message published so far (PUBACK)."""
        async with asyncio.timeout(timeout):
            while not all(s in self.sent for s in range(1, self.last_feed_seq + 1)):
                self.sent_event.clear()
                await self.sent_event.wait()

    async def wait_acked(self, timeout: float, at_least: int | None = None) -> None:
        """Until an ack covers every message published so far (or ``at_least`` of them)."""
        async with asyncio.timeout(timeout):
            while self.acked < (self.last_feed_seq if at_least is None else at_least):
                self.acked_event.clear()
                await self.acked_event.wait()

    # -- the connection ------------------------------------------------------------

    async def run(self) -> None:
        """Stay connected (reconnecting), publish what is queued, answer acks and replays."""
        while True:
            try:
                async with aiomqtt.Client(
                    self.host,
                    self.port,
                    identifier=self.table + "-" + self.epoch[:8],
                    protocol=aiomqtt.ProtocolVersion.V5,
                ) as client:
                    await client.subscribe(f"{self.prefix}/ack", qos=1)
                    await client.subscribe(f"{self.prefix}/replay", qos=1)
                    await client.publish(f"{self.prefix}/status", self.status(), qos=1, retain=True)
                    # Like the outbox: what the broker never acknowledged goes out again.
                    for seq in sorted(s for s in self.held if s not in self.sent):
                        self._queue.put_nowait(seq)
                    async with asyncio.TaskGroup() as tg:
                        tg.create_task(self._send(client), name=f"{self.table}-send")
                        async for message in client.messages:
                            with contextlib.suppress(ValueError):
                                body = json.loads(bytes(message.payload))
                                if str(message.topic).endswith("/ack"):
                                    self._on_ack(body)
                                else:
                                    self._on_replay(body)
                        raise aiomqtt.MqttError("connection closed")
            except* aiomqtt.MqttError:
                pass
            await asyncio.sleep(0.2)

    async def _send(self, client: aiomqtt.Client) -> None:
        announced = -1
        while True:
            seqs = [await self._queue.get()]
            while not self._queue.empty() and len(seqs) < SEND_WINDOW:
                seqs.append(self._queue.get_nowait())
            batch = [s for s in dict.fromkeys(seqs) if s in self.held]
            await asyncio.gather(*(client.publish(*self.held[s], qos=1) for s in batch))
            self.sent.update(batch)
            self.sent_event.set()
            if self._queue.empty() and announced != self.last_feed_seq:
                announced = self.last_feed_seq
                await client.publish(f"{self.prefix}/status", self.status(), qos=1, retain=True)


def _runs(seqs: list[int]) -> str:
    """``3..5, 8``: the runs of sorted ``seqs``, as a table names them."""
    runs: list[list[int]] = []
    for seq in seqs:
        if runs and runs[-1][1] == seq - 1:
            runs[-1][1] = seq
        else:
            runs.append([seq, seq])
    return ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in runs)
