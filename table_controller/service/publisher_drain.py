"""Draining the outbox over one connection: the in-flight window, PUBACKs and refusals.

* What an input has just committed goes on the wire in the input's own turn
  of the event loop (``publish_now``) when the drain waits caught up; the
  drain then settles those PUBACKs first. Otherwise the drain is woken and
  sends from the outbox, in its order.
* Up to ``MAX_IN_FLIGHT`` messages (or the broker's Receive Maximum) are in
  flight at once; PUBACKs come back in order, and each batch is marked sent
  in one journal transaction.
* A PUBACK reason code of 0x80 or above is a refusal: the message stays in
  the outbox (held back for a while: ``publisher_refusals.py``) and ``on_refused``
  fires once per message id.
* A broker that refuses a message by dropping the connection (a packet above
  its size limit, say) cannot block the outbox: a DISCONNECT naming such a
  reason refuses the message at the head of the in-flight window; a plain drop
  makes the next connection send one message at a time, and a message alone in
  flight at ``POISON_LOSSES`` drops in a row counts as refused.
* While connected, what arrives on the table's subscriptions (``ack``,
  ``replay``, ``status``) goes to ``on_message``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

import aiomqtt
from paho.mqtt.properties import Properties

from table_controller.service.errors import JournalFault
from table_controller.service.mqtt_client import (
    LOST,
    AckingClient,
    AckTimeout,
    ConnectionLost,
)
from table_controller.service.outbox import OutboxMessage
from table_controller.service.publisher_refusals import (
    IMPLEMENTATION_ERROR,
    MESSAGE_REFUSALS,
    POISON_LOSSES,
    REFUSAL_MIN,
    Refusals,
)

log = logging.getLogger("table_controller.service.publisher")

# Messages handed to the connection before waiting for their PUBACKs (paho's
# default, and Mosquitto's default Receive Maximum); a smaller Receive Maximum
# from the broker's CONNACK wins.
MAX_IN_FLIGHT: Final = 20
BATCH: Final = 100

# Fault injection for the crash tests (tests/security): with this set to a topic leaf
# (``rounds``), the process kills itself (SIGKILL) right after the broker acknowledged
# a message on that leaf and before the outbox marks it sent: the one moment where a
# crash must make the message go again (at least once, with the same id).
# Read once at import: nothing is looked up on the publishing path.
KILL_BEFORE_MARK_ENV: Final = "TABLE_CONTROLLER_KILL_BEFORE_MARK"
_KILL_BEFORE_MARK: Final = os.environ.get(KILL_BEFORE_MARK_ENV)


def _fault_point(batch: list[OutboxMessage], acked: list[str]) -> None:
    leaf = _KILL_BEFORE_MARK
    if leaf and any(m.topic.endswith(f"/{leaf}") for m in batch if m.id in acked):
        os.kill(os.getpid(), signal.SIGKILL)


class Drain(Refusals):
    """Publishes what the journal holds over one connection, for as long as it lasts."""

    identity_conflict: bool
    connected: bool
    _client: AckingClient | None
    _subscriptions: tuple[str, ...]
    _on_message: Callable[[str, bytes], None] | None
    _unjournaled: dict[str, OutboxMessage]
    _views: dict[str, OutboxMessage]
    _publish_props: Properties | None
    _ack_timeout_s: float
    _closing: bool
    _woken: bool
    _idle: asyncio.Event
    _wake_fut: asyncio.Future[None] | None
    _express: list[tuple[OutboxMessage, asyncio.Future[int]]]
    _held_back: bool
    _careful: int
    _lost_sending: bool
    _suspect: str | None
    _suspect_losses: int
    _up_since: float | None

    async def _serve(self, client: AckingClient) -> None:
        if not self._subscriptions or self._on_message is None:
            await self._drain(client)
            return
        await client.subscribe([(topic, 1) for topic in self._subscriptions])
        reader = asyncio.create_task(self._read(client), name="publisher-reader")
        try:
            await self._drain(client)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
                await reader

    async def _read(self, client: AckingClient) -> None:
        on_message = self._on_message
        assert on_message is not None
        async for msg in client.messages:
            payload = msg.payload if isinstance(msg.payload, bytes) else str(msg.payload).encode()
            self._call(on_message, str(msg.topic), payload)

    def wake(self) -> None:
        """New messages were enqueued (call from the event loop's thread)."""
        self._woken = True
        self._idle.clear()
        fut = self._wake_fut
        if fut is not None and not fut.done():
            fut.set_result(None)

    def publish_now(self, messages: Sequence[OutboxMessage]) -> None:
        """Messages the journal has just committed: onto the wire at once.

        When the drain waits, caught up (it found nothing to send, nothing is
        in flight, no wake-up is pending, and no refused message is held back
        for a retry that might fall due first), these are the next messages in
        order: they are published here, in the caller's turn of the event loop,
        and the drain then settles their PUBACKs and marks them sent. Otherwise
        (or from the first one paho cannot take) the drain is woken and takes
        them from the journal in turn.
        """
        client = self._client
        waiting = self._wake_fut
        if (
            client is not None
            and self.connected
            and waiting is not None
            and not waiting.done()
            and not (self._closing or self._careful or self._express or self._held_back)
            and len(messages) <= min(MAX_IN_FLIGHT, client.receive_maximum or MAX_IN_FLIGHT)
        ):
            for msg in messages:
                try:
                    ack = client.publish_nowait(msg, self._publish_props)
                except (ConnectionLost, ValueError, aiomqtt.MqttError):
                    break  # the drain meets it again, from the journal
                self._express.append((msg, ack))
        self.wake()

    async def _drain(self, client: AckingClient) -> None:
        lost = client.lost
        loop = asyncio.get_running_loop()
        window = min(MAX_IN_FLIGHT, client.receive_maximum or MAX_IN_FLIGHT)
        while True:
            if self._express:
                # Published by publish_now: their PUBACKs first, before the outbox
                # is read again (it still holds them until they are marked sent),
                # and before a loss is taken: a loss with messages in flight is
                # handled as such (_lost_in_flight).
                express, self._express = self._express, []
                self._from_memory = set()
                await self._send(client, [], window, published=express)
                continue
            if client.disconnect_reason is not None:
                # Gone already: aiomqtt forgets a disconnect that came with the CONNACK.
                raise ConnectionLost("connection lost")
            self._check_stable()
            if not self._closing:
                self._woken = False
                unjournaled = list(self._unjournaled.values())
                self._unjournaled.clear()
                views: list[OutboxMessage] = []
                # Past those the journal holds that are not to go now.
                hidden = self._not_now()
                pending = self._journal.pending(BATCH + len(hidden))
                batch = unjournaled + [m for m in pending if m.id not in hidden]
                if len(batch) < BATCH:
                    # The views last: a state shows what the events before it say.
                    views = list(self._views.values())
                    self._views.clear()
                    batch += views
                if batch:
                    self._idle.clear()
                    self._from_memory = {m.id for m in unjournaled + views}
                    try:
                        await self._send(client, batch, window)
                    except BaseException:
                        # Held in memory only: they go again on the next connection,
                        # unless newer ones came meanwhile (a resend keeps its id).
                        self._take_back(unjournaled, views)
                        raise
                    continue
                if self._woken:
                    continue
                if self._unmarked:
                    self._mark_sent([])  # the journal may commit again
                self._idle.set()
            await self._sleep(loop, lost)
            if lost.done() and not self._express:
                raise ConnectionLost("connection lost")

    def _take_back(self, unjournaled: list[OutboxMessage], views: list[OutboxMessage]) -> None:
        for msg in unjournaled:
            self._unjournaled.setdefault(msg.topic if msg.retain else msg.id, msg)
        for msg in views:
            self._views.setdefault(msg.topic, msg)

    async def _sleep(self, loop: asyncio.AbstractEventLoop, lost: asyncio.Future[None]) -> None:
        """Until woken, the connection lost, or the next retry due.

        The wake future is awaited itself (not through ``asyncio.wait``, which
        takes one more turn of the loop): woken by a new input that publish_now
        could not send itself, the drain runs next, before the views built after
        it.
        """
        retry_in = None if self._closing else self._retry_timeout()
        # A refused message waits for its retry: the drain alone decides what goes
        # next (the retry's time is the wall clock's, which can step).
        self._held_back = retry_in is not None
        self._wake_fut = wake = loop.create_future()

        def on_lost(_: asyncio.Future[None]) -> None:
            if not wake.done():
                wake.set_result(None)

        lost.add_done_callback(on_lost)
        try:
            async with asyncio.timeout(retry_in):
                await wake
        except TimeoutError:
            pass
        finally:
            lost.remove_done_callback(on_lost)
            self._wake_fut = None

    async def _send(
        self,
        client: AckingClient,
        batch: list[OutboxMessage],
        window: int,
        *,
        published: Sequence[tuple[OutboxMessage, asyncio.Future[int]]] = (),
    ) -> None:
        """Publish ``batch`` within the window, after ``published`` (already on the wire),
        and settle every PUBACK."""
        in_flight = deque(published)
        acked: list[str] = []
        if published:
            batch = [msg for msg, _ in published] + batch
        try:
            for msg in batch[len(published) :]:
                while len(in_flight) >= (1 if self._careful else window):
                    await self._settle_head(client, in_flight, acked)
                try:
                    fut = client.publish_nowait(msg, self._publish_props)
                except ValueError as exc:
                    # paho cannot encode it (it checks topic and size): it can never go.
                    log.error("message %s cannot be published: %s", msg.id, exc)
                    self._refused(msg, IMPLEMENTATION_ERROR)
                    continue
                in_flight.append((msg, fut))
            while in_flight:
                await self._settle_head(client, in_flight, acked)
        except ConnectionLost:
            if in_flight:
                self._lost_in_flight(client, in_flight[0][0], alone=len(in_flight) == 1)
            raise
        finally:
            if acked:
                _fault_point(batch, acked)
                # A view, or a message sent while the journal could not commit, has no
                # row in the outbox: nothing to mark, and no transaction to open for it.
                journaled = [i for i in acked if i not in self._from_memory]
                if journaled:
                    self._mark_sent(journaled)

    def _lost_in_flight(self, client: AckingClient, head: OutboxMessage, *, alone: bool) -> None:
        """The connection went with ``head`` the oldest message not acknowledged.

        A broker that refuses a PUBLISH by disconnecting (too large, bad
        topic…) would block the outbox forever if that message were simply
        sent again first. A DISCONNECT that names such a reason refuses the
        head at once (PUBACKs and DISCONNECT come in order). A connection that
        just drops says nothing about which message it choked on, so the next
        connection sends one message at a time for a while; a message alone
        on the wire at ``POISON_LOSSES`` losses in a row counts as refused.
        """
        code = client.disconnect_reason
        self._careful = MAX_IN_FLIGHT
        self._lost_sending = True
        if client.disconnect_from_broker and code in MESSAGE_REFUSALS:
            assert code is not None
            self._suspect, self._suspect_losses = None, 0
            self._refused(head, code)
            return
        if not alone:
            return
        if head.id == self._suspect:
            self._suspect_losses += 1
        else:
            self._suspect, self._suspect_losses = head.id, 1
        if self._suspect_losses >= POISON_LOSSES:
            self._suspect, self._suspect_losses = None, 0
            self._refused(head, code if code is not None and code >= REFUSAL_MIN else REFUSAL_MIN)

    async def _settle_head(
        self,
        client: AckingClient,
        in_flight: deque[tuple[OutboxMessage, asyncio.Future[int]]],
        acked: list[str],
    ) -> None:
        msg, fut = in_flight[0]
        code = await self._ack(client, fut)
        in_flight.popleft()
        if self._careful:
            self._careful -= 1
        if msg.id == self._suspect:
            self._suspect, self._suspect_losses = None, 0
        if code >= REFUSAL_MIN:
            self._refused(msg, code)
        else:
            acked.append(msg.id)
            self._held.pop(msg.id, None)

    async def _ack(self, client: AckingClient, fut: asyncio.Future[int]) -> int:
        lost = client.lost
        done, _ = await asyncio.wait(
            (fut, lost), timeout=self._ack_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if fut in done and fut.result() != LOST:
            return fut.result()
        if fut in done or lost in done:
            raise ConnectionLost("connection lost with messages in flight")
        raise AckTimeout(f"no PUBACK within {self._ack_timeout_s:.0f} s")

    def _mark_sent(self, ids: list[str]) -> None:
        try:
            self._journal.mark_sent([*self._unmarked, *ids])
        except JournalFault as exc:
            # Not marked: held here, so not sent again and again meanwhile, and marked once
            # the journal commits (after a restart they go again, with the same ids).
            self._unmarked.update(ids)
            log.debug("sent marks not journaled: %s", exc)
            return
        self._unmarked.clear()
