"""A stop ends every broker connection, even one whose cancel is lost as it connects.

Python 3.11's ``wait_for`` returns the result, not the cancel, when both land at once, and
aiomqtt awaits the CONNACK so. A stop whose cancel reaches a connection then must still end
it, not leave it connected for good with the stop waiting on it. Each client here is a real
aiomqtt client on the real broker that loses the first cancel of its connect on purpose:
the recorder, the pit display and the rigs' observer must each stop all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import aiomqtt
import pytest
from rich.console import Console

from table_controller.pit import client as pit_client
from table_controller.pit.model import PitModel
from table_controller.pit.views import BrokerLink
from table_controller.recorder.store.backend import migrate, open_backend
from table_controller.recorder.subscriber import Recorder
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.observer import Observer
from tests.recorder.conftest import recorder_config

WAIT_S = 20.0


class LosesOneCancel(aiomqtt.Client):
    """Swallows the first cancel of its connect, then connects as if none had come."""

    entered: asyncio.Event

    async def __aenter__(self) -> LosesOneCancel:
        self.entered.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()  # until the stop's cancel, which is lost
        await super().__aenter__()
        return self


def _losing(
    make: Callable[..., aiomqtt.Client], entered: asyncio.Event
) -> Callable[..., aiomqtt.Client]:
    """``make``, whose clients each lose one cancel; ``entered`` is set as one connects."""

    def client(*args: Any) -> aiomqtt.Client:
        real = make(*args)
        real.__class__ = LosesOneCancel
        cast(LosesOneCancel, real).entered = entered
        return real

    return client


async def _ends(awaitable: Awaitable[Any]) -> None:
    """Fails unless ``awaitable`` ends within WAIT_S. Not wait_for: its own cancel at the
    timeout could be swallowed by what it waits on, and pass for an end."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=WAIT_S)
    if task not in done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert task in done, "still running: the stop's cancel was lost"
    task.result()


async def test_the_recorder_stops(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    entered = asyncio.Event()
    db = open_backend(f"sqlite://{tmp_path}/recorder.db")
    await migrate(db)
    recorder = Recorder(recorder_config(mosquitto, "postgresql://unused").mqtt, db)
    recorder._new_client = _losing(recorder._new_client, entered)  # type: ignore[method-assign]
    try:
        task = asyncio.create_task(recorder.run(), name="test-recorder")
        await asyncio.wait_for(entered.wait(), WAIT_S)
        recorder.stop()
        await _ends(task)
    finally:
        await db.close()


async def test_the_pit_display_stops(
    mosquitto: MosquittoBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered = asyncio.Event()
    monkeypatch.setattr(pit_client, "_client", _losing(pit_client._client, entered))
    model = PitModel(site="lost-cancel")
    stop = asyncio.Event()
    console = Console(file=io.StringIO(), width=160)
    task = asyncio.create_task(
        pit_client.watch(mosquitto.url, "lost-cancel", console=console, stop=stop, model=model),
        name="test-pit",
    )
    await asyncio.wait_for(entered.wait(), WAIT_S)
    stop.set()
    await _ends(task)
    assert model.connection.state is BrokerLink.IDLE


async def test_the_observer_closes(mosquitto: MosquittoBroker) -> None:
    entered = asyncio.Event()
    observer = Observer(mosquitto.url, "lost-cancel/#")
    observer._new_client = _losing(observer._new_client, entered)  # type: ignore[method-assign]
    # start() waits until subscribed, which this connect may never come to: run it aside.
    starting = asyncio.create_task(observer.start(), name="test-observer-start")
    try:
        await asyncio.wait_for(entered.wait(), WAIT_S)
        await _ends(observer.close())
        assert observer._task is None
    finally:
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await starting
