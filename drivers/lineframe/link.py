"""Runs a line device's protocol over a serial link, reconnecting until closed.

The link owns the I/O that the protocols leave out: it opens a
:class:`~drivers.transport.SerialTransport`, feeds the decoder, hands frames
and the passing of time to the protocol, writes what the protocol asks, and
queues events for the client's consumer, or hands each one straight to the
consumer's sink (:meth:`LineClient.feed`) as its bytes are read. When a
session ends (the link fails, or the protocol finds the device silent) it
reports the device offline once, waits a capped, jittered backoff and opens the
link again, forever, until closed (a supervisor owns reconnect, as pymodbus's
named reconnect task does).

Events are queued without a bound on purpose: they come only from device
activity (a card drawn, a button pressed, a state change) — never from noise,
which the decoder drops — so their number is bounded by what happens at the
table, and dropping one would lose a card.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar

from drivers.backoff import BACKOFF_CAP_S, BACKOFF_INITIAL_S, backoff_delay
from drivers.errors import TransportError
from drivers.lifecycle import AsyncResource
from drivers.lineframe.codec import DecoderStats, LineDecoder, LineFrame
from drivers.lineframe.session import LinkProtocol, Step
from drivers.transport import DEFAULT_BAUDRATE, SerialTransport

F = TypeVar("F", bound=LineFrame)
C = TypeVar("C", bound=LineFrame)
E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class _End:
    """The client was closed: iteration stops."""


class _SinkFailed(Exception):
    """The consumer's sink raised: the consumer's error, not the link's."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True, slots=True)
class _Failure:
    """The link stopped on an error no reconnect mends (a URL pyserial cannot open)."""

    error: BaseException


class LineLink(Generic[F, C, E]):
    """One line device: protocol + decoder + transport + reconnect + event queue."""

    def __init__(
        self,
        url: str,
        *,
        name: str,
        parse: Callable[[str], F],
        protocol: LinkProtocol[F, C, E],
        offline_event: Callable[[str], E],
        logger: logging.Logger,
        baudrate: int = DEFAULT_BAUDRATE,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        serial_options: dict[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.name = name
        self._protocol = protocol
        self._offline_event = offline_event
        self._log = logger
        self._baudrate = baudrate
        self._backoff_initial_s = backoff_initial_s
        self._backoff_cap_s = backoff_cap_s
        self._serial_options = serial_options or {}
        self._decoder: LineDecoder[F] = LineDecoder(parse)
        self._rng = random.Random()
        self._events: asyncio.Queue[E | _End | _Failure] = asyncio.Queue()
        self.sink: Callable[[E], None] | None = None
        """Set: each event goes to it as it comes, not to the queue."""
        self._task: asyncio.Task[None] | None = None
        self._transport: SerialTransport | None = None
        self._online: bool | None = None
        self._session_online = False
        # While the session waits for its protocol's deadline: that deadline, and what a
        # frame bringing it nearer sets.
        self._waiting: tuple[float | None, asyncio.Future[None]] | None = None
        self.sessions = 0
        """Links opened so far (reconnects are ``sessions - 1``)."""

    @property
    def online(self) -> bool:
        """The device has shown it is there on the current link."""
        return bool(self._online)

    @property
    def stats(self) -> DecoderStats:
        return self._decoder.stats

    @property
    def running(self) -> bool:
        return self._task is not None

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError(f"{self.name} client is already open (clients are not re-entrant)")
        self._events = asyncio.Queue()
        self._online = None
        self._task = asyncio.create_task(self._supervise(), name=f"{self.name}-link {self.url}")

    async def close(self) -> None:
        """Stop reconnecting, close the link; iteration ends after the queued events."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        except Exception:  # already handed to the consumer as a _Failure
            self._log.debug("%s link ended with an error", self.name, exc_info=True)
        self._events.put_nowait(_End())

    async def next_event(self) -> E:
        events = self._events
        item = await events.get()
        if isinstance(item, _End):
            # Every later call ends too: on this queue, not on the one a reopened
            # link has made since.
            events.put_nowait(item)
            raise StopAsyncIteration
        if isinstance(item, _Failure):
            raise item.error
        return item

    def send(self, frame: C) -> None:
        """Write one frame now; TransportError while the link is down."""
        transport = self._transport
        if transport is None:
            raise TransportError(f"{self.name} at {self.url} is offline")
        transport.write(frame.encode())

    # -- supervisor ------------------------------------------------------------------

    async def _supervise(self) -> None:
        attempt = 0
        try:
            while True:
                transport = SerialTransport(
                    self.url, baudrate=self._baudrate, logger=self._log, **self._serial_options
                )
                try:
                    await transport.open()
                except TransportError as exc:
                    self._went_offline(f"open_failed: {exc}")
                else:
                    self.sessions += 1
                    try:
                        reason = await self._session(transport)
                    except TransportError as exc:
                        reason = f"link_lost: {exc}"
                    finally:
                        self._transport = None
                        await transport.close()
                    if self._session_online:
                        attempt = 0
                    self._went_offline(reason)
                delay = backoff_delay(
                    attempt,
                    initial_s=self._backoff_initial_s,
                    cap_s=self._backoff_cap_s,
                    rng=self._rng,
                )
                attempt += 1
                self._log.debug("%s: reconnecting to %s in %.2f s", self.name, self.url, delay)
                await asyncio.sleep(delay)
        except asyncio.CancelledError:
            raise
        except _SinkFailed as failed:
            # The consumer's own error: the consumer reports it (``feed`` raises it).
            self._log.debug("%s link to %s stopped by its consumer", self.name, self.url)
            self._events.put_nowait(_Failure(failed.error))
            self._events.put_nowait(_End())
            raise failed.error from None
        except Exception as exc:
            self._log.error("%s link to %s stopped: %s", self.name, self.url, exc)
            self._events.put_nowait(_Failure(exc))
            self._events.put_nowait(_End())
            raise

    async def _session(self, transport: SerialTransport) -> str:
        """One connection, until the protocol or the link ends it: why it ended.

        A port the event loop reads hands its chunks to the receiver as it reads
        them (``deliver_to``), and this task only keeps the protocol's time; any
        other port is read here, chunk by chunk, into the same receiver.
        """
        loop = asyncio.get_running_loop()
        protocol = self._protocol
        self._decoder.reset()
        self._transport = transport
        self._session_online = False
        lost = self._apply(protocol.connection_made(loop.time()), transport)
        if lost is not None:
            return lost
        ended: asyncio.Future[str] = loop.create_future()

        def on_lost(exc: TransportError) -> None:
            if not ended.done():
                ended.set_exception(exc)

        received = self._receiver(transport, ended)
        in_loop = transport.deliver_to(received, on_lost)
        try:
            while not ended.done():
                deadline = protocol.deadline()
                if deadline is not None and loop.time() >= deadline:
                    lost = self._apply(protocol.timer(loop.time()), transport)
                    if lost is not None:
                        return lost
                    continue
                if in_loop:
                    # Woken early by a frame that brings the protocol's deadline nearer
                    # (a gap's resend is due in 1 s, the heartbeat's in 3).
                    timeout = None if deadline is None else deadline - loop.time()
                    self._waiting = (deadline, loop.create_future())
                    await asyncio.wait(
                        (ended, self._waiting[1]),
                        timeout=timeout,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    self._waiting = None
                    continue
                try:
                    async with asyncio.timeout_at(deadline):
                        data = await transport.read()
                except TimeoutError:
                    continue
                received(data)
            return ended.result()
        finally:
            # Whatever the port still hands over, until it is closed, goes nowhere.
            ended.cancel()

    def _receiver(
        self, transport: SerialTransport, ended: asyncio.Future[str]
    ) -> Callable[[bytes], None]:
        """What each chunk read goes to: frames to the protocol, events to the sink,
        at once. The session's end (or what went wrong, the sink's error too) goes
        to ``ended``."""
        loop = asyncio.get_running_loop()
        protocol = self._protocol

        def received(data: bytes) -> None:
            if ended.done():
                return  # the session is over; the port is being closed
            try:
                for frame in self._decoder.feed(data):
                    lost = self._apply(protocol.frame_received(frame, loop.time()), transport)
                    if lost is not None:
                        ended.set_result(lost)
                        return
            except Exception as exc:  # KeyboardInterrupt and SystemExit stop the loop
                ended.set_exception(exc)
                return
            waiting = self._waiting
            if waiting is not None and not waiting[1].done():
                due = protocol.deadline()
                if due is not None and (waiting[0] is None or due < waiting[0]):
                    waiting[1].set_result(None)

        return received

    def _apply(self, step: Step[C, E], transport: SerialTransport) -> str | None:
        if step.online is not None:
            self._session_online = True
            self._went_online(step.online)
        for event in step.events:
            self._emit(event)
        for frame in step.send:
            transport.write(frame.encode())
        return step.lost

    def _went_online(self, event: E) -> None:
        if self._online:
            return
        if self._online is None:
            self._log.info("%s online at %s", self.name, self.url)
        else:
            self._log.info("%s back at %s", self.name, self.url)
        self._online = True
        self._emit(event)

    def _went_offline(self, reason: str) -> None:
        if self._online is False:
            self._log.debug("%s still offline: %s", self.name, reason)
            return
        self._log.warning("%s offline at %s: %s", self.name, self.url, reason)
        self._online = False
        self._emit(self._offline_event(reason))

    def _emit(self, event: E) -> None:
        sink = self.sink
        if sink is None:
            self._events.put_nowait(event)
            return
        try:
            sink(event)
        except Exception as exc:
            raise _SinkFailed(exc) from exc


class LineClient(AsyncResource, Generic[F, C, E]):
    """What every line device client is around its link: an async context manager and an
    async iterator of the device's events. Reusable after ``close()``, not re-entrant.

    Subclasses build ``self._link`` and add the device's own commands.
    """

    _link: LineLink[F, C, E]

    @property
    def url(self) -> str:
        return self._link.url

    @property
    def online(self) -> bool:
        return self._link.online

    @property
    def stats(self) -> DecoderStats:
        """Frames taken and dropped by the decoder, over every connection."""
        return self._link.stats

    @property
    def sessions(self) -> int:
        """Connections opened so far."""
        return self._link.sessions

    async def open(self) -> None:
        await self._link.start()

    async def close(self) -> None:
        await self._link.close()

    async def feed(self, sink: Callable[[E], None]) -> None:
        """Hand every event to ``sink`` as the link decodes it, until the client closes.

        Instead of iterating: no queue and no task switch between the bytes read
        and the consumer. The sink is called in the event loop's callback that
        read them (a port with a descriptor: a device, a pty, ``socket://``), or
        in the link's task (a port read on a thread). Events queued before come
        first. ``sink`` must not block. What it raises closes the client and is
        raised here, as is the error of a link that cannot go on.
        """
        link = self._link
        link.sink = sink
        try:
            while True:
                # Only what was queued before, then the end (or the link's failure).
                sink(await link.next_event())
        except StopAsyncIteration:
            return
        except Exception:
            await self.close()
            raise
        finally:
            if link.sink is sink:  # not a newer feed's, after a reopen
                link.sink = None

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> E:
        return await self._link.next_event()
