"""ConsoleClient against the simulated console over a real pty and over ``socket://``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import pytest

from drivers.console import (
    ButtonPressed,
    ConsoleAction,
    ConsoleClient,
    ConsoleEvent,
    ConsoleOffline,
    ConsoleOnline,
    ConsoleRestarted,
    NakReason,
)
from drivers.console.frames import AckFrame, NakFrame
from drivers.errors import TransportError
from drivers.lineframe.cards import Card
from simulators.console import ConsoleSimulator

FAST_HEARTBEAT_S = 0.05
REPLUG_BOUND_S = 5.0
STEP_BOUND_S = 10.0
E = TypeVar("E", bound=ConsoleEvent)


async def until(
    client: ConsoleClient, want: Callable[[ConsoleEvent], bool], *, within: float = STEP_BOUND_S
) -> list[ConsoleEvent]:
    seen: list[ConsoleEvent] = []
    async with asyncio.timeout(within):
        async for event in client:
            seen.append(event)
            if want(event):
                return seen
    raise AssertionError(f"client ended before the event wanted; saw {seen}")


async def first(client: ConsoleClient, kind: type[E], *, within: float = STEP_BOUND_S) -> E:
    event = (await until(client, lambda e: isinstance(e, kind), within=within))[-1]
    assert isinstance(event, kind)
    return event


@pytest.fixture(params=["pty", "socket"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[ConsoleSimulator, str]]:
    async with ConsoleSimulator(heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await (sim.serve_pty() if request.param == "pty" else sim.serve_tcp())
        yield sim, url


async def test_press_ack_and_nak_round_trip(served: tuple[ConsoleSimulator, str]) -> None:
    sim, url = served
    async with ConsoleClient(url) as console:
        await first(console, ConsoleOnline)
        k_war = sim.press(ConsoleAction.WAR, 2)
        k_card = sim.press(ConsoleAction.CARD, Card.parse("JH"))
        k_void = sim.press("VOID_ROUND")
        assert await first(console, ButtonPressed) == ButtonPressed(k_war, ConsoleAction.WAR, "2")
        await console.nak(k_war, NakReason.NO_WAR_WAGER)
        card = await first(console, ButtonPressed)
        assert card.card == Card.parse("JH")
        await console.ack(k_card)
        assert await first(console, ButtonPressed) == ButtonPressed(
            k_void, ConsoleAction.VOID_ROUND
        )
        await console.nak(k_void, "NOT_NOW")
        async with asyncio.timeout(STEP_BOUND_S):
            assert await sim.answer(k_war) == NakFrame(k_war, "NO_WAR_WAGER")
            assert await sim.answer(k_card) == AckFrame(k_card)
            assert await sim.answer(k_void) == NakFrame(k_void, "NOT_NOW")
        assert sim.unanswered == []


async def test_show_reaches_the_display(served: tuple[ConsoleSimulator, str]) -> None:
    sim, url = served
    async with ConsoleClient(url) as console:
        await first(console, ConsoleOnline)
        waiting = asyncio.ensure_future(sim.shown("Round 12, no more bets"))
        await console.show("Round 12, no more bets")
        async with asyncio.timeout(STEP_BOUND_S):
            assert await waiting == "Round 12, no more bets"


async def test_unanswered_press_is_delivered_again_after_a_reconnect(
    served: tuple[ConsoleSimulator, str],
) -> None:
    sim, url = served
    async with ConsoleClient(url) as console:
        await first(console, ConsoleOnline)
        k = sim.press(ConsoleAction.SURRENDER, 3)
        pressed = await first(console, ButtonPressed)
        sim.disconnect()  # the answer was never given: the cable came out first
        events = await until(console, lambda e: isinstance(e, ButtonPressed), within=REPLUG_BOUND_S)
        assert isinstance(events[0], ConsoleOffline)
        assert ConsoleOnline() in events
        assert events[-1] == pressed == ButtonPressed(k, ConsoleAction.SURRENDER, "3")
        await console.ack(k)
        async with asyncio.timeout(STEP_BOUND_S):
            assert await sim.answer(k) == AckFrame(k)


async def test_restart_is_reported(served: tuple[ConsoleSimulator, str]) -> None:
    sim, url = served
    async with ConsoleClient(url) as console:
        await first(console, ConsoleOnline)
        k = sim.press(ConsoleAction.SHUFFLED)
        await first(console, ButtonPressed)
        await console.ack(k)
        async with asyncio.timeout(STEP_BOUND_S):
            await sim.answer(k)
        sim.restart()
        await first(console, ConsoleRestarted)
        k2 = sim.press(ConsoleAction.CONFIRM)
        assert k2 == 1
        assert await first(console, ButtonPressed) == ButtonPressed(1, ConsoleAction.CONFIRM)


async def test_heartbeat_loss_then_return(served: tuple[ConsoleSimulator, str]) -> None:
    sim, url = served
    async with ConsoleClient(url) as console:
        await first(console, ConsoleOnline)
        sim.hang()
        offline = await first(console, ConsoleOffline, within=3.0 + STEP_BOUND_S)
        assert offline.reason == "heartbeat_timeout"
        sim.resume()
        await first(console, ConsoleOnline, within=REPLUG_BOUND_S)


async def test_server_stopped_and_restarted_recovers_within_five_seconds() -> None:
    async with ConsoleSimulator(heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_tcp()
        port = int(url.rsplit(":", 1)[1])
        async with ConsoleClient(url) as console:
            await first(console, ConsoleOnline)
            await sim.stop_serving()
            await first(console, ConsoleOffline)
            k = sim.press(ConsoleAction.NO_MORE_BETS)  # pressed while unplugged
            await sim.serve_tcp(port=port)
            events = await until(
                console, lambda e: isinstance(e, ButtonPressed), within=REPLUG_BOUND_S
            )
            assert ConsoleOnline() in events
            assert events[-1] == ButtonPressed(k, ConsoleAction.NO_MORE_BETS)


async def test_answers_while_offline_say_retry_later() -> None:
    async with ConsoleSimulator(heartbeat_s=FAST_HEARTBEAT_S) as sim:
        url = await sim.serve_tcp()
        await sim.stop_serving()
        async with ConsoleClient(url) as console:
            await first(console, ConsoleOffline)
            with pytest.raises(TransportError, match="offline"):
                await console.ack(1)
            with pytest.raises(TransportError):
                await console.show("anyone?")
