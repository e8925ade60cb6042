"""The table's three devices: each built from its URL alone, its events turned into inputs.

This is the composition root for devices. The same driver runs whether the URL
names real hardware (``/dev/war-shoe``, ``usb://1209:0001``) or a simulator
(``socket://127.0.0.1:7001``, a pty path, ``simusb://127.0.0.1:7003``): the
production code cannot tell them apart.

Each ``*_task`` owns its client for the life of the service, feeds the
runner one input per device event (the shoe's and the console's through the
client's ``feed``, as their bytes are read), and carries the runner's answers
back to the device (console replies and display lines, layout lights).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from drivers.console import (
    ButtonPressed,
    ConsoleClient,
    ConsoleEvent,
    ConsoleOffline,
    ConsoleOnline,
    ConsoleRestarted,
)
from drivers.errors import DeviceLinkError
from drivers.sensors import (
    BoardOffline,
    BoardOnline,
    SensorBoardClient,
    SensorEvent,
    SpotsSnapshot,
)
from drivers.shoe import (
    CardDrawn,
    CardMisread,
    CoverDrawn,
    ReadsLost,
    ShoeClient,
    ShoeEvent,
    ShoeOffline,
    ShoeOnline,
    ShoeState,
)
from table_controller.engine import (
    CardRead,
    ConsolePress,
    ConsoleReply,
    CoverRead,
    DeviceOffline,
    DeviceOnline,
    Input,
    Misread,
    PressesRenumbered,
    ReadGap,
    ShoeStatus,
    SpotsChanged,
)
from table_controller.service.runner import TableRunner

log = logging.getLogger(__name__)
E = TypeVar("E")


def shoe_input(event: ShoeEvent, at: datetime) -> Input | None:
    """The engine input for one shoe event (docs/devices.md, card-reading shoe)."""
    match event:
        case CardDrawn(n=n, card=card):
            return CardRead(at=at, n=n, card=str(card))
        case CardMisread(n=n):
            return Misread(at=at, n=n)
        case CoverDrawn(n=n):
            return CoverRead(at=at, n=n)
        case ReadsLost(first_missing=first, reason=reason, last_missing=last):
            return ReadGap(at=at, first_missing=first, reason=str(reason), last_missing=last)
        case ShoeState(state=state):
            return ShoeStatus(at=at, state=str(state))
        case ShoeOnline():
            return DeviceOnline(at=at, device="shoe")
        case ShoeOffline(reason=reason):
            return DeviceOffline(at=at, device="shoe", detail=reason)
    return None


def console_input(event: ConsoleEvent, at: datetime) -> Input | None:
    match event:
        case ButtonPressed(k=k, action=action, arg=arg):
            return ConsolePress(at=at, k=k, action=str(action), arg=arg)
        case ConsoleRestarted():
            return PressesRenumbered(at=at)
        case ConsoleOnline():
            return DeviceOnline(at=at, device="console")
        case ConsoleOffline(reason=reason):
            return DeviceOffline(at=at, device="console", detail=reason)
    return None


def sensors_input(event: SensorEvent, at: datetime) -> Input | None:
    match event:
        case SpotsSnapshot(present=present, fault=fault, values=values):
            return SpotsChanged(at=at, present=present, fault=fault, values=values)
        case BoardOnline():
            return DeviceOnline(at=at, device="sensors")
        case BoardOffline(reason=reason):
            return DeviceOffline(at=at, device="sensors", detail=reason)
    return None


async def shoe_task(runner: TableRunner, url: str) -> None:
    """The shoe, resumed where the journal left off: it is asked only for missed reads.

    After a JOURNAL_FAULT the reads the journal could not take are asked for again
    (docs/rules.md: they come back by ``RESEND``): the session starts over from the last
    read journaled.
    """
    while True:
        runner.shoe_resync.clear()
        async with ShoeClient(url, last_n=runner.engine.last_read_n) as shoe:
            reader = asyncio.create_task(_read_shoe(runner, shoe), name="shoe-reader")
            resync = asyncio.create_task(runner.shoe_resync.wait(), name="shoe-resync")
            try:
                await asyncio.wait((reader, resync), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (reader, resync):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if reader.done() and not reader.cancelled():
                reader.result()
                return
        log.info("shoe: asking again for the reads after %d", runner.engine.last_read_n)


async def _read_shoe(runner: TableRunner, shoe: ShoeClient) -> None:
    # As its bytes are read: a card goes from its frame to the journal and the
    # broker with no task switch.
    await shoe.feed(lambda event: _feed(runner, shoe_input, event))


async def console_task(runner: TableRunner, url: str) -> None:
    # The highest press answered before a restart (from the journal): a console
    # that restarted while the controller was down says so with a STATUS below
    # it, and its new presses must not get the old presses' answers (docs/devices.md).
    last_answered = runner.engine.answered_up_to
    async with (
        ConsoleClient(url, last_answered=last_answered) as console,
        asyncio.TaskGroup() as tg,
    ):
        tg.create_task(_console_writer(runner, console), name="console-writer")
        await console.feed(lambda event: _feed(runner, console_input, event))


async def _console_writer(runner: TableRunner, console: ConsoleClient) -> None:
    while True:
        out = await runner.console_out.get()
        try:
            if isinstance(out, ConsoleReply):
                if out.reason is None:
                    await console.ack(out.k)
                else:
                    await console.nak(out.k, out.reason)
            else:
                await console.show(out.text)
        except DeviceLinkError as exc:
            # The console re-sends an unanswered press after it reconnects, and
            # gets the same answer from the engine then (docs/devices.md).
            log.debug("console answer not delivered: %s", exc)


async def sensors_task(runner: TableRunner, url: str) -> None:
    async with SensorBoardClient(url) as board, asyncio.TaskGroup() as tg:
        if not board.serial_pinned:
            # Any USB device with the board's VID:PID would be taken for it.
            log.warning(
                "sensors %s: no board serial pinned; add ?serial=<the board's serial> so that "
                "only that board is taken as the sensor board",
                url,
            )
        tg.create_task(_lights_writer(runner, board), name="lights-writer")
        async for event in board:
            if isinstance(event, BoardOnline):
                runner.board_serial = event.serial
            _feed(runner, sensors_input, event)


async def _lights_writer(runner: TableRunner, board: SensorBoardClient) -> None:
    while True:
        out = await runner.lights_out.get()
        # An offline board keeps the mask and is lit again when it returns.
        with contextlib.suppress(DeviceLinkError):
            await board.set_lights(out.mask)


def _feed(runner: TableRunner, convert: Callable[[E, datetime], Input | None], event: E) -> None:
    inp = convert(event, runner.clock())
    if inp is not None:
        runner.handle(inp)
