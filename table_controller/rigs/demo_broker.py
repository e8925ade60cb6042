"""The demo's broker: the one given, or one of its own (mosquitto when installed, else
amqtt in this process, which speaks MQTT 3.1.1 only)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from table_controller.feed.broker import parse_broker_url
from table_controller.rigs.broker import MosquittoBroker, find_mosquitto, free_port
from table_controller.rigs.errors import DemoError

CONNECT_TIMEOUT_S: Final = 5.0


class BrokerImpl(StrEnum):
    """Which broker the demo embeds when no ``--broker`` is given."""

    AUTO = "auto"
    MOSQUITTO = "mosquitto"
    AMQTT = "amqtt"


@dataclass(frozen=True, slots=True)
class DemoBroker:
    url: str
    protocol: str
    """``"5"``, or ``"3.1.1"`` for a broker without MQTT 5 (amqtt)."""
    name: str


@contextlib.asynccontextmanager
async def _amqtt_broker(port: int | None) -> AsyncIterator[int]:
    """amqtt in this process on a loopback port (None: a free one); yields the port."""
    from amqtt.broker import Broker  # only on this path: mosquitto needs none of it

    port = port if port is not None else free_port()
    broker = Broker(
        {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
            # Only anonymous access on loopback: no $SYS topics and no packet logging.
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
    )
    await broker.start()
    try:
        yield port
    finally:
        await broker.shutdown()


async def _reachable(broker: DemoBroker) -> None:
    """A clear error, at once, when nothing listens at an external broker's address.

    Not for the embedded ones: amqtt takes a connection without MQTT as an error.
    """
    address = parse_broker_url(broker.url)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            _, writer = await asyncio.open_connection(address.host, address.port)
    except (OSError, TimeoutError) as exc:
        raise DemoError(f"{broker.name}: cannot connect ({exc or 'timed out'})") from exc
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


@contextlib.asynccontextmanager
async def demo_broker(
    url: str | None = None,
    impl: BrokerImpl = BrokerImpl.AUTO,
    protocol: str = "5",
    *,
    port: int | None = None,
) -> AsyncIterator[DemoBroker]:
    """The broker the demo uses: ``url`` when given, else an embedded one (on ``port``
    when given, so that others can find it there).

    ``BrokerImpl.AUTO`` embeds mosquitto when :func:`find_mosquitto` finds it,
    else amqtt. :class:`BrokerError` when mosquitto is asked for and missing.
    """
    if url is not None:
        external = DemoBroker(url, protocol, f"broker {url}")
        await _reachable(external)
        yield external
        return
    if impl is BrokerImpl.AUTO:
        impl = BrokerImpl.MOSQUITTO if find_mosquitto() else BrokerImpl.AMQTT
    if impl is BrokerImpl.MOSQUITTO:
        with MosquittoBroker(port) as broker:
            yield DemoBroker(broker.url, "5", f"embedded mosquitto at {broker.url}")
        return
    async with _amqtt_broker(port) as bound:
        # docs/feed.md: amqtt speaks 3.1.1 only.
        url = f"mqtt://127.0.0.1:{bound}"
        yield DemoBroker(url, "3.1.1", f"embedded amqtt (MQTT 3.1.1) at {url}")


def watch_line(broker: DemoBroker, site: str) -> str:
    """Where the demo's broker is, and the command that watches the table's feed
    (``mosquitto_sub`` is in Debian's ``mosquitto-clients``)."""
    address = parse_broker_url(broker.url)
    version = "mqttv311" if broker.protocol == "3.1.1" else "mqttv5"
    return (
        f"broker {broker.url} (watch: mosquitto_sub -h {address.host} -p {address.port} "
        f"-V {version} -t 'casino/{site}/#' -v)"
    )
