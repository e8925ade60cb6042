"""Serving a simulated device on a serial port the simulator opens itself: a rig's cable.

On a test bench the simulator is the far end of a real line: ``/dev/ttyUSB1``
(one end of a null-modem cable whose other end is the table PC's shoe port),
``rfc2217://…`` (a terminal server), ``socket://HOST:PORT`` (connecting to a
listener) or a pty. It is opened with pyserial, through the drivers' own
:class:`~drivers.transport.SerialTransport`, so every URL the drivers accept
works here too, with the same bytes on it.

A serial line has no "controller connected" signal: the device counts as
connected while its port is open. A port that fails (the adapter unplugged,
the far side of a pty pair gone) is closed, logged once at WARNING, and opened
again with capped, jittered backoff until it is back (logged at INFO).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from drivers.backoff import BACKOFF_CAP_S, BACKOFF_INITIAL_S, backoff_delay
from drivers.errors import TransportError
from drivers.transport import DEFAULT_BAUDRATE, SerialTransport
from simulators.errors import LineSettingsError
from simulators.line import Endpoint, Line

log = logging.getLogger("simulators")

BYTESIZES = (5, 6, 7, 8)
PARITIES = ("N", "E", "O", "M", "S")
STOPBITS = (1, 1.5, 2)

PORT_WRITE_TIMEOUT_S = 0.05
"""A write waits at most this long for a line nobody reads (a cable with no table at the
far end); what does not fit is dropped and counted, as bytes on a dead line are."""


@dataclass(frozen=True, slots=True)
class LineSettings:
    """Speed and character format of a serial line (docs/devices.md: 115200 8N1 by default)."""

    baudrate: int = DEFAULT_BAUDRATE
    bytesize: int = 8
    parity: str = "N"
    stopbits: float = 1

    def __post_init__(self) -> None:
        if isinstance(self.baudrate, bool) or not isinstance(self.baudrate, int):
            raise LineSettingsError(f"--baud must be a whole number, not {self.baudrate!r}")
        if self.baudrate <= 0:
            raise LineSettingsError(f"--baud must be positive, not {self.baudrate}")
        if self.bytesize not in BYTESIZES:
            raise LineSettingsError(
                f"--bytesize must be one of {', '.join(map(str, BYTESIZES))}, not {self.bytesize}"
            )
        if self.parity not in PARITIES:
            raise LineSettingsError(
                f"--parity must be one of {', '.join(PARITIES)}, not {self.parity!r}"
            )
        if self.stopbits not in STOPBITS:
            raise LineSettingsError(f"--stopbits must be 1, 1.5 or 2, not {self.stopbits}")

    def __str__(self) -> str:
        stop = f"{self.stopbits:g}"
        return f"{self.baudrate} {self.bytesize}{self.parity}{stop}"

    def serial_options(self) -> dict[str, Any]:
        """Keyword arguments for pyserial besides the baud rate."""
        return {"bytesize": self.bytesize, "parity": self.parity, "stopbits": self.stopbits}


class PortEndpoint(Endpoint):
    """A pyserial URL the simulator opens, and opens again whenever it was lost."""

    def __init__(
        self,
        line: Line,
        url: str,
        settings: LineSettings,
        *,
        reopen_initial_s: float = BACKOFF_INITIAL_S,
        reopen_cap_s: float = BACKOFF_CAP_S,
    ) -> None:
        self._line = line
        self.url = url
        self.settings = settings
        self._reopen_initial_s = reopen_initial_s
        self._reopen_cap_s = reopen_cap_s
        self._transport: SerialTransport | None = None
        self._task: asyncio.Task[None] | None = None
        self._opened = asyncio.Event()
        self._open_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._closing: asyncio.Task[None] | None = None
        self._dropping = False
        self.opens = 0
        """Times the port was opened (reopens are ``opens - 1``)."""

    @property
    def connected(self) -> bool:
        return self._transport is not None

    async def wait_open(self) -> None:
        """Return once the port is open (at once if it is)."""
        await self._opened.wait()

    async def wait_opens(self, count: int) -> None:
        """Return once the port has been opened ``count`` times in all (reopens included)."""
        if self.opens >= count:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._open_waiters.append((count, waiter))
        try:
            await waiter
        finally:
            self._open_waiters = [(n, w) for n, w in self._open_waiters if w is not waiter]

    async def start(self) -> str:
        """Open the port and serve it; LineSettingsError if it can never be opened.

        A port that is not there yet (the adapter not plugged in) is not an error:
        it is logged and looked for until it appears.
        """
        if self._task is not None:
            raise RuntimeError(f"{self._line.name} simulator is already serving on {self.url}")
        transport: SerialTransport | None = self._transport_for()
        assert transport is not None
        try:
            await transport.open()
        except TransportError as exc:
            log.warning(
                "%s: cannot open %s yet (%s); opening it when it is there",
                self._line.name,
                self.url,
                exc,
            )
            transport = None
        except ValueError as exc:
            raise LineSettingsError(
                f"{self._line.name}: pyserial cannot open {self.url!r} at {self.settings}: {exc}"
            ) from exc
        else:
            self._took(transport)
        self._task = asyncio.create_task(
            self._serve(transport), name=f"sim-{self._line.name}-port {self.url}"
        )
        return self.url or ""

    def send(self, data: bytes) -> bool:
        transport = self._transport
        if transport is None:
            return self._line.dropped(len(data))
        try:
            transport.write(data)
        except TransportError:
            # A stuck line (timeout) or a vanished port: the reader notices the latter and
            # reopens; either way these bytes are gone, as on a real line.
            return self._line.dropped(len(data))
        return True

    def disconnect(self) -> None:
        """Close the port and open it again at once, as a cable pulled and put back."""
        transport = self._transport
        if transport is not None and self._closing is None:
            self._dropping = True
            self._closing = asyncio.create_task(
                transport.close(), name=f"sim-{self._line.name}-port-drop {self.url}"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        closing, self._closing = self._closing, None
        if closing is not None:
            await closing
        transport, self._transport = self._transport, None
        if transport is not None:
            # Opened by start(), but the serving task was cancelled before it began.
            self._opened.clear()
            self._line.left()
            await transport.close()

    def _transport_for(self) -> SerialTransport:
        return SerialTransport(
            self.url or "",
            baudrate=self.settings.baudrate,
            logger=log,
            write_timeout=PORT_WRITE_TIMEOUT_S,
            **self.settings.serial_options(),
        )

    async def _serve(self, transport: SerialTransport | None) -> None:
        attempt = 0
        try:
            while True:
                if transport is None:
                    await asyncio.sleep(
                        backoff_delay(
                            attempt, initial_s=self._reopen_initial_s, cap_s=self._reopen_cap_s
                        )
                    )
                    attempt += 1
                    transport = await self._reopen()
                    if transport is None:
                        continue
                    self._took(transport)
                attempt = 0
                await self._session(transport)
                transport = None
        finally:
            self._opened.clear()

    async def _reopen(self) -> SerialTransport | None:
        transport = self._transport_for()
        try:
            await transport.open()
        except (TransportError, ValueError) as exc:
            log.debug("%s: %s still not there: %s", self._line.name, self.url, exc)
            return None
        log.info("%s: %s is back, serving it at %s", self._line.name, self.url, self.settings)
        return transport

    def _took(self, transport: SerialTransport) -> None:
        """The port is open: from now on the device is on the line."""
        self.opens += 1
        self._transport = transport
        self._opened.set()
        for count, waiter in self._open_waiters:
            if self.opens >= count and not waiter.done():
                waiter.set_result(None)
        self._line.arrived()

    async def _session(self, transport: SerialTransport) -> None:
        try:
            while True:
                self._line.received(await transport.read())
        except TransportError as exc:
            if self._dropping:
                log.info("%s: %s closed and opened again (disconnect)", self._line.name, self.url)
            else:
                log.warning(
                    "%s: %s vanished (%s); opening it again when it is back",
                    self._line.name,
                    self.url,
                    exc,
                )
        finally:
            self._dropping = False
            closing, self._closing = self._closing, None
            if closing is not None:
                await closing
            self._transport = None
            self._opened.clear()
            self._line.left()
            await transport.close()
