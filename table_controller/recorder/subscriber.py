"""The recorder at work: subscribe, commit, ack, ask for replays (``docs/recorder.md``).

Three named tasks under one TaskGroup:

* ``recorder-mqtt`` keeps one MQTT 5 connection with a persistent session
  (``clean_start`` false, a session expiry) and reconnects with capped,
  jittered backoff. ``events``, ``rounds`` and ``alerts`` come through the
  shared subscription ``$share/<group>/casino/<site>/table/+/<topic>``, so
  the recorders of a group split them. ``status``, ``state`` and ``stats``
  are subscribed plainly: a broker sends no retained messages to a shared
  subscription (MQTT 5 §4.8.2), and every recorder wants the latest of each.
* ``recorder-commit`` stores what arrived in batches, one transaction each,
  retrying while the database is away (the messages wait in memory; the
  tables still hold them, unacknowledged), then publishes the acks: never
  ahead of the database.
* ``recorder-gaps`` asks for what is missing (``replay``) and writes the
  feeds' progress.

:meth:`Recorder.stop` (SIGTERM) stops taking messages, commits what it has,
publishes the acks and disconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from drivers.backoff import backoff_delay
from table_controller.feed.broker import (
    cancel_until_ended,
    parse_broker_url,
    read_password,
    tls_context,
)
from table_controller.recorder.book import FeedBook, Outgoing
from table_controller.recorder.config import MqttSection
from table_controller.recorder.errors import DatabaseUnavailable
from table_controller.recorder.intake import (
    LATEST,
    SEQUENCED,
    FeedMessage,
    IntakeError,
    Leaf,
    parse_message,
)
from table_controller.recorder.live import LiveHub, without_burn_ranks
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.quarantine import Storing
from table_controller.recorder.times import now_text, parse_time
from table_controller.recorder.unparsed import kept_unparsed

log = logging.getLogger(__name__)
_T = TypeVar("_T")

BATCH_MAX: Final = 2000
GAP_CHECK_S: Final = 0.25
RETRY_INITIAL_S: Final = 0.5
RETRY_MAX_S: Final = 5.0
KEEPALIVE_S: Final = 15
PUBLISH_TIMEOUT_S: Final = 10.0
PUBLISH_WINDOW: Final = 100
LAGS_KEPT: Final = 10_000_000


def subscriptions(mqtt: MqttSection) -> list[str]:
    """The topic filters of the recorder's sites (docs/recorder.md); MQTT 3.1.1 has no shares."""
    share = f"$share/{mqtt.group}/" if mqtt.protocol == "5" else ""
    # The retained ones first: each table's ``status`` names its epoch before the feed's
    # first ``alerts`` message (which carries none) can arrive.
    out = [f"casino/{site}/table/+/{leaf}" for site in mqtt.sites for leaf in sorted(LATEST)]
    for site in mqtt.sites:
        out += [f"{share}casino/{site}/table/+/{leaf}" for leaf in sorted(SEQUENCED)]
    return out


class Recorder:
    """One recorder process's work; ``run()`` until ``stop()``."""

    def __init__(
        self,
        mqtt: MqttSection,
        db: Backend,
        *,
        live: LiveHub | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mqtt = mqtt
        self.db = db
        self.live = live or LiveHub()
        self.book = FeedBook(mqtt.name)
        self.address = parse_broker_url(mqtt.url)
        self._password = None if mqtt.password_file is None else read_password(mqtt.password_file)
        self._tls = (
            tls_context(mqtt.ca_file) if self.address.tls or mqtt.ca_file is not None else None
        )
        self._clock = clock
        self._pending: list[FeedMessage] = []
        self._arrived = asyncio.Event()
        self._stopping = asyncio.Event()
        self._client: aiomqtt.Client | None = None
        self._connected = asyncio.Event()
        self._outgoing: list[Outgoing] = []
        # Counters for logs and the benchmark.
        self.received = 0
        self.stored = 0
        self.duplicates = 0
        self.dropped = 0
        self.commit_lag_ms: list[float] = []
        self.committed = asyncio.Condition()

    def stop(self) -> None:
        self._stopping.set()

    async def subscribed(self) -> None:
        """Until the recorder is connected and subscribed to every topic it reads."""
        await self._connected.wait()

    async def run(self) -> None:
        if self.mqtt.protocol == "3.1.1":
            log.warning(
                "MQTT 3.1.1: refused publishes cannot be seen and there is no shared "
                "subscription: run this recorder alone (docs/feed.md)"
            )
        async with asyncio.TaskGroup() as tg:
            mqtt = tg.create_task(self._mqtt_loop(), name="recorder-mqtt")
            gaps = tg.create_task(self._gap_loop(), name="recorder-gaps")
            await self._commit_loop()
            gaps.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gaps
            await self._flush()
            await cancel_until_ended(mqtt)

    # -- MQTT ------------------------------------------------------------------------

    def _new_client(self) -> aiomqtt.Client:
        common: dict[str, Any] = {
            "username": self.mqtt.username,
            "password": self._password,
            "identifier": self.mqtt.name,
            "keepalive": KEEPALIVE_S,
            "tls_context": self._tls,
        }
        if self.mqtt.protocol == "3.1.1":
            return aiomqtt.Client(
                self.address.host,
                self.address.port,
                protocol=aiomqtt.ProtocolVersion.V311,
                clean_session=False,
                **common,
            )
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = self.mqtt.session_expiry_s
        return aiomqtt.Client(
            self.address.host,
            self.address.port,
            protocol=aiomqtt.ProtocolVersion.V5,
            clean_start=False,
            properties=props,
            **common,
        )

    async def _mqtt_loop(self) -> None:
        attempt = 0
        while True:
            try:
                client = self._new_client()
                # aiomqtt warns past 10 publishes awaiting their PUBACK; we send windows.
                client.pending_calls_threshold = PUBLISH_WINDOW
                async with client:
                    for topic in subscriptions(self.mqtt):
                        await client.subscribe(topic, qos=1)
                    log.info("recorder %s: connected to %s", self.mqtt.name, self.mqtt.url)
                    attempt = 0
                    self._client = client
                    self.book.forget_acks()
                    self._connected.set()
                    self._arrived.set()  # publish what waited for the connection
                    async for message in client.messages:
                        self._take(str(message.topic), message.payload)
            except aiomqtt.MqttError as exc:
                if attempt == 0:
                    log.warning("recorder %s: broker connection lost: %s", self.mqtt.name, exc)
            finally:
                self._client = None
                self._connected.clear()
            await asyncio.sleep(
                backoff_delay(attempt, initial_s=RETRY_INITIAL_S, cap_s=RETRY_MAX_S)
            )
            attempt += 1

    def _take(self, topic: str, payload: object) -> None:
        if self._stopping.is_set():
            return  # after SIGTERM: the tables still hold it, unacknowledged
        self.received += 1
        if payload == b"" and topic.rpartition("/")[2] in LATEST:
            return  # a retained message cleared (a table taken off the floor): nothing to store
        if not isinstance(payload, bytes | bytearray):
            self.dropped += 1
            return
        try:
            msg = parse_message(topic, bytes(payload))
        except IntakeError as exc:
            kept = kept_unparsed(topic, bytes(payload), str(exc))
            if kept is None:
                self.dropped += 1
                log.warning("dropped a message that cannot be stored: %s", exc)
                return
            log.warning("kept a message whose envelope does not parse as %s: %s", kept.id, exc)
            msg = kept
        if msg.leaf in LATEST and not msg.readable:
            log.warning("%s: not kept as the table's latest: %s", topic, msg.problem)
        self._pending.append(msg)
        self._arrived.set()

    async def _publish(self, items: list[Outgoing]) -> None:
        """Publish, or keep for the next connection (acks are retained: the latest wins).

        Up to ``PUBLISH_WINDOW`` at once: a commit may move the acks of hundreds of
        tables, and one PUBACK round trip each in turn would hold the next commit.
        """
        self._outgoing += items
        client = self._client
        if client is None or not self._outgoing:
            return
        todo, self._outgoing = self._outgoing, []
        for i in range(0, len(todo), PUBLISH_WINDOW):
            window = todo[i : i + PUBLISH_WINDOW]
            try:
                await asyncio.wait_for(
                    asyncio.gather(
                        *(
                            client.publish(o.topic, o.payload, qos=1, retain=o.retain)
                            for o in window
                        )
                    ),
                    PUBLISH_TIMEOUT_S,
                )
            except (aiomqtt.MqttError, TimeoutError):
                # Acks wait for the next connection; replay requests are made again when due.
                self._outgoing = [o for o in todo[i:] if o.retain] + self._outgoing
                return

    # -- commits ---------------------------------------------------------------------

    async def _commit_loop(self) -> None:
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            while True:
                if not self._pending:
                    self._arrived.clear()
                    if self._stopping.is_set():
                        return
                    waiter = asyncio.ensure_future(self._arrived.wait())
                    await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
                    waiter.cancel()
                    if not self._pending:
                        await self._publish(self.book.acks())
                        continue
                batch, self._pending = self._pending[:BATCH_MAX], self._pending[BATCH_MAX:]
                try:
                    await self._commit(await self.book.with_epochs(self.db, batch))
                except _Stopped as exc:
                    log.warning(
                        "stopping with %d messages not stored (%s): unacknowledged, the "
                        "tables keep them for the next start",
                        len(batch) + len(self._pending),
                        exc,
                    )
                    return
                # The feed's progress before its acks: /api/gaps is never behind an ack.
                with contextlib.suppress(DatabaseUnavailable):
                    await self.book.save(self.db)
                await self._publish(self.book.acks())
        finally:
            stop.cancel()

    async def _commit(self, batch: list[FeedMessage]) -> None:
        # Two steps, each retried on its own: once the batch is stored, a retry of the
        # book's step must not store it again (it would all be duplicates, and what was
        # new would never reach the live feed).
        storing = Storing(batch)
        stopping = self._stopping
        done = await _until_done(lambda: storing.step(self.db, received=now_text()), stopping)
        await _until_done(lambda: self.book.absorb(self.db, batch), stopping)
        now = datetime.now(UTC)
        for msg in done.new:
            if msg.feed_seq is not None and len(self.commit_lag_ms) < LAGS_KEPT:
                self.commit_lag_ms.append((now - parse_time(msg.ts)).total_seconds() * 1000)
        for msg in [*done.new, *(m for m in batch if m.leaf in LATEST and m.readable)]:
            if msg.misplaced or msg.unparsed:
                continue  # shown as no table's (see store_batch), or with nothing to show
            self.live.publish(
                {"site": msg.site, "table": msg.table, "topic": msg.leaf.value, "id": msg.id}
                | {"ts": msg.ts, "feed_seq": msg.feed_seq}
                | {"payload": without_burn_ranks(msg.body) if msg.leaf is Leaf.ROUNDS else msg.body}
            )
        self.stored += len(done.new)
        self.duplicates += done.duplicates
        async with self.committed:
            self.committed.notify_all()

    async def _flush(self) -> None:
        """At stop: the last acks, while still connected."""
        try:
            await self.book.save(self.db)
        except DatabaseUnavailable as exc:
            # A summary only: the next start rebuilds it from the stored messages.
            log.warning("feed progress not saved at stop: %s", exc)
        await self._publish(self.book.acks())

    # -- gaps ------------------------------------------------------------------------

    async def _gap_loop(self) -> None:
        while True:
            await asyncio.sleep(GAP_CHECK_S)
            try:
                replays = await self.book.check(self.db, self._clock())
                await self.book.save(self.db)
            except DatabaseUnavailable:
                continue
            await self._publish(replays + self.book.acks())


class _Stopped(Exception):
    """Asked to stop while the database was away."""


async def _until_done(step: Callable[[], Awaitable[_T]], stopping: asyncio.Event) -> _T:
    """``step()``, run again with capped, jittered backoff while the database is away,
    until it is done or a stop is asked for (``_Stopped``: nothing more is acknowledged,
    and a table keeps what it was not acknowledged)."""
    attempt = 0
    while True:
        try:
            result = await step()
        except DatabaseUnavailable as exc:
            if stopping.is_set():
                raise _Stopped(f"the database is away: {exc}") from exc
            if attempt == 0:
                log.warning("database unavailable, acks wait: %s", exc)
            delay = backoff_delay(attempt, initial_s=RETRY_INITIAL_S, cap_s=RETRY_MAX_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), delay)
            attempt += 1
            continue
        if attempt:
            log.info("database back after %d retries", attempt)
        return result
