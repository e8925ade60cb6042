"""The pit's MQTT client: connect, subscribe read only, reconnect, and keep the view live.

:func:`watch` connects (aiomqtt, MQTT 5, or 3.1.1 for a broker without 5),
feeds a :class:`~.model.PitModel` and keeps a ``rich.live.Live`` view current;
the demo runs it in-process. It never publishes. The caller owns reconnection:
capped, jittered backoff, the broker's state shown on screen.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import ssl
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode
from rich.console import Console
from rich.live import Live

# The broker address, password file and TLS helpers: the one import of them in the pit.
from table_controller.feed.broker import (
    BrokerConfigError,
    cancel_until_ended,
    check_password_transport,
    parse_broker_url,
    read_password,
    tls_context,
)
from table_controller.feed.topics import DEFAULT_PREFIX
from table_controller.pit.errors import PitConfigError, PitConnectError, SubscriptionRefused
from table_controller.pit.model import PitModel
from table_controller.pit.render import render
from table_controller.pit.views import BrokerLink

log = logging.getLogger(__name__)

ONCE_SETTLE_S = 1.0  # --once: retained messages arrive right after the subscription
REFRESH_INTERVAL_S = 0.25  # the live view redraws at most this often
RECONNECT_MIN_S = 0.5
RECONNECT_MAX_S = 30.0
KEEPALIVE_S = 15
MAX_QUEUED_MESSAGES = 10_000


class MqttVersion(StrEnum):
    """MQTT version. 5 by default (docs/feed.md); 3.1.1 for a broker that cannot speak 5,
    such as the demo's embedded amqtt. The pit never publishes, so what docs/feed.md holds
    against 3.1.1 (a denied publish acknowledged as if it succeeded) does not touch it."""

    V5 = "5"
    V311 = "3.1.1"


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    url: str
    host: str
    port: int
    tls: ssl.SSLContext | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    protocol: MqttVersion = MqttVersion.V5


def read_password_file(path: str | Path) -> str:
    """The password in ``path``; a secret that others may read is refused."""
    try:
        return read_password(Path(path), key="--password-file")
    except BrokerConfigError as exc:
        raise PitConfigError(str(exc)) from exc


def broker_settings(
    url: str,
    *,
    username: str | None = None,
    password_file: str | Path | None = None,
    ca_file: str | Path | None = None,
    protocol: str = MqttVersion.V5,
) -> BrokerSettings:
    """Connection settings from the pit's options; PitConfigError names the bad one."""
    try:
        version = MqttVersion(protocol)
    except ValueError:
        raise PitConfigError(f"--protocol {protocol!r}: 5 or 3.1.1") from None
    try:
        address = parse_broker_url(url, key="--broker")
    except BrokerConfigError as exc:
        raise PitConfigError(str(exc)) from exc
    tls: ssl.SSLContext | None = None
    if address.tls:
        try:
            # Verifies the broker's certificate and its host name (docs/devices.md: ca_file).
            tls = tls_context(Path(ca_file) if ca_file else None, key="--ca-file")
        except BrokerConfigError as exc:
            raise PitConfigError(str(exc)) from exc
    elif ca_file is not None:
        raise PitConfigError("--ca-file needs an mqtts:// broker URL")
    password = None
    if password_file is not None:
        if username is None:
            raise PitConfigError("--password-file needs --username")
        password = read_password_file(password_file)
        try:
            check_password_transport(
                address, allow_plaintext=False, key="--broker", fix="use mqtts:// (with --ca-file)"
            )
        except BrokerConfigError as exc:
            raise PitConfigError(str(exc)) from exc
    return BrokerSettings(
        url=url,
        host=address.host,
        port=address.port,
        tls=tls,
        username=username,
        password=password,
        protocol=version,
    )


def _client(settings: BrokerSettings) -> aiomqtt.Client:
    return aiomqtt.Client(
        settings.host,
        settings.port,
        username=settings.username,
        password=settings.password,
        identifier=f"pit-{secrets.token_hex(6)}",
        protocol=(
            aiomqtt.ProtocolVersion.V5
            if settings.protocol is MqttVersion.V5
            else aiomqtt.ProtocolVersion.V311
        ),
        keepalive=KEEPALIVE_S,
        tls_context=settings.tls,
        max_queued_incoming_messages=MAX_QUEUED_MESSAGES,
    )


def subscription_refusal(granted: Iterable[ReasonCode | int]) -> str | None:
    """What a SUBACK refused, or None: a code of 0x80 or above is a refusal (MQTT 5
    reason codes; 0x80 is 3.1.1's only failure code)."""
    for code in granted:
        if isinstance(code, ReasonCode):
            if code.value >= 0x80:
                return f"{code.getName()} (0x{code.value:02X})"
        elif code >= 0x80:
            return f"0x{code:02X}"
    return None


async def _subscribe(client: aiomqtt.Client, model: PitModel) -> None:
    refused = subscription_refusal(await client.subscribe(model.subscription, qos=1))
    if refused is not None:
        raise SubscriptionRefused(f"subscription to {model.subscription} refused: {refused}")


def _payload_bytes(payload: object) -> bytes:
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    if payload is None:
        return b""
    return str(payload).encode("utf-8")


async def _receive(
    client: aiomqtt.Client,
    model: PitModel,
    on_update: Callable[[PitModel], None] | None,
    dirty: asyncio.Event | None,
) -> None:
    async for message in client.messages:
        try:
            model.feed(message.topic.value, _payload_bytes(message.payload))
        except Exception:
            # The model counts every bad message itself; this is a defect, and a pit
            # display must outlive it (one traceback, then a count on screen).
            if not model.internal_errors:
                log.exception("pit: a message on %s could not be shown", message.topic.value)
            model.note_internal_error()
        _changed(model, on_update, dirty)


def _changed(
    model: PitModel,
    on_update: Callable[[PitModel], None] | None,
    dirty: asyncio.Event | None,
) -> None:
    if dirty is not None:
        dirty.set()
    if on_update is not None:
        on_update(model)


async def _follow(
    settings: BrokerSettings,
    model: PitModel,
    on_update: Callable[[PitModel], None] | None,
    dirty: asyncio.Event,
) -> None:
    """Stay subscribed for ever: reconnect with capped, jittered backoff."""
    rng = random.Random()
    failures = 0
    was_lost = False
    while True:
        model.set_connection(
            BrokerLink.CONNECTING if not failures else BrokerLink.RETRYING, settings.url, None
        )
        _changed(model, on_update, dirty)
        try:
            async with _client(settings) as client:
                await _subscribe(client, model)
                if was_lost:
                    log.info("pit: broker %s is back", settings.url)
                was_lost = False
                failures = 0
                model.set_connection(BrokerLink.CONNECTED, settings.url, None)
                _changed(model, on_update, dirty)
                await _receive(client, model, on_update, dirty)
        except (aiomqtt.MqttError, SubscriptionRefused) as exc:
            # A refused subscription may be an access rule being fixed: retry it too.
            if not was_lost:
                log.warning("pit: broker %s lost: %s", settings.url, exc)
                was_lost = True
            delay = min(RECONNECT_MAX_S, RECONNECT_MIN_S * 2 ** min(failures, 16))
            delay *= rng.uniform(0.5, 1.0)
            failures += 1
            model.set_connection(BrokerLink.RETRYING, settings.url, f"{exc}; retry in {delay:.1f}s")
            _changed(model, on_update, dirty)
            await asyncio.sleep(delay)


async def _redraw(live: Live, model: PitModel, dirty: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await dirty.wait()
        dirty.clear()
        began = loop.time()
        live.update(render(model), refresh=True)
        drawing_s = loop.time() - began
        # Many messages at once (the retained ones on subscribing) make one redraw,
        # and drawing never takes more than a fifth of the loop from reading the feed.
        await asyncio.sleep(max(REFRESH_INTERVAL_S, 4 * drawing_s))


async def _cancel(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel each task, again while it runs on (a cancel lost as it connects), until done."""
    await asyncio.gather(*(cancel_until_ended(task) for task in tasks))


async def _snapshot(
    settings: BrokerSettings,
    model: PitModel,
    stop: asyncio.Event,
    on_update: Callable[[PitModel], None] | None,
) -> None:
    model.set_connection(BrokerLink.CONNECTING, settings.url, None)
    try:
        async with _client(settings) as client:
            await _subscribe(client, model)
            model.set_connection(BrokerLink.CONNECTED, settings.url, None)
            receiver = asyncio.create_task(
                _receive(client, model, on_update, None), name="pit-once-receive"
            )
            stopper = asyncio.create_task(stop.wait(), name="pit-once-stop")
            try:
                done, _ = await asyncio.wait(
                    {receiver, stopper},
                    timeout=ONCE_SETTLE_S,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                await _cancel((receiver, stopper))
            if receiver in done:
                receiver.result()  # the connection was lost: its MqttError, raised here
    except aiomqtt.MqttError as exc:
        model.set_connection(BrokerLink.RETRYING, settings.url, str(exc))
        raise PitConnectError(f"broker {settings.url}: {exc}") from exc


async def watch(
    broker_url: str,
    site: str | None,
    *,
    console: Console | None = None,
    stop: asyncio.Event | None = None,
    prefix: str = DEFAULT_PREFIX,
    username: str | None = None,
    password_file: str | Path | None = None,
    ca_file: str | Path | None = None,
    protocol: str = MqttVersion.V5,
    once: bool = False,
    model: PitModel | None = None,
    on_update: Callable[[PitModel], None] | None = None,
) -> None:
    """Show every table of ``site`` (every site when None) until ``stop`` is set.

    MQTT 5 unless ``protocol="3.1.1"`` (the demo's amqtt broker speaks only that).
    Reconnects for ever with capped, jittered backoff, showing the broker's state
    on screen. With ``once``, prints one snapshot after the retained messages
    (about a second) and returns; a broker that cannot be reached is then a
    :class:`PitConnectError`. ``model`` (its own prefix and site are used) lets a
    caller read what was shown; ``on_update`` is called after every message and
    connection change. Bad options raise :class:`PitConfigError`.
    """
    settings = broker_settings(
        broker_url,
        username=username,
        password_file=password_file,
        ca_file=ca_file,
        protocol=protocol,
    )
    if model is None:
        model = PitModel(prefix, site)
    console = console if console is not None else Console()
    stop = stop if stop is not None else asyncio.Event()
    if once:
        await _snapshot(settings, model, stop, on_update)
        console.print(render(model))
        return
    dirty = asyncio.Event()
    with Live(render(model), console=console, auto_refresh=False) as live:
        try:
            async with asyncio.TaskGroup() as group:
                tasks = (
                    group.create_task(
                        _follow(settings, model, on_update, dirty), name="pit-follow"
                    ),
                    group.create_task(_redraw(live, model, dirty), name="pit-redraw"),
                )
                await stop.wait()
                await _cancel(tasks)
        finally:
            model.set_connection(BrokerLink.IDLE, settings.url, None)
            live.update(render(model), refresh=True)
    if not console.is_terminal:
        console.line()  # a file or pipe gets the final view once, at the end; end its line
