"""The pit against a real mosquitto: retained and live messages, the last will, a broker
restart, and ``--once`` from the command line."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode
from rich.console import Console

from table_controller import cli
from table_controller.feed.topics import RETAINED_TOPICS
from table_controller.pit.client import watch
from table_controller.pit.model import PitModel
from table_controller.pit.views import BrokerLink, Link, TableView
from table_controller.rigs.broker import MosquittoBroker
from tests.pit_rig import Message, _Null, _publish, _retained, _secret, _site
from tests.test_pit_payloads import TABLE, alert, enc, event, last_will, round_record, status, topic

WAIT_S = 10.0


def _cleared(site: str, table: str = TABLE) -> list[Message]:
    return [(topic(kind, table, site), b"", True) for kind in sorted(RETAINED_TOPICS)]


class _Until:
    """on_update for watch(): wakes whoever waits for a condition on the model."""

    def __init__(self) -> None:
        self._waiting: list[tuple[Callable[[PitModel], bool], asyncio.Event]] = []

    def __call__(self, model: PitModel) -> None:
        for condition, event_ in self._waiting:
            if condition(model):
                event_.set()

    async def wait(self, model: PitModel, condition: Callable[[PitModel], bool]) -> None:
        if condition(model):
            return
        entry = (condition, asyncio.Event())
        self._waiting.append(entry)
        try:
            await asyncio.wait_for(entry[1].wait(), WAIT_S)
        finally:
            self._waiting.remove(entry)


@dataclass
class _Watching:
    model: PitModel
    until: _Until
    console: Console

    def view(self, table: str = TABLE) -> TableView | None:
        return self.model.table(table)

    async def wait(self, condition: Callable[[PitModel], bool]) -> None:
        await self.until.wait(self.model, condition)

    async def wait_view(self, condition: Callable[[TableView], bool]) -> None:
        def check(model: PitModel) -> bool:
            view = model.table(TABLE)
            return view is not None and condition(view)

        await self.wait(check)


@contextlib.asynccontextmanager
async def _watching(url: str, site: str, **options: Any) -> AsyncIterator[_Watching]:
    model = PitModel(site=site)
    until = _Until()
    console = Console(record=True, width=160, file=_Null())
    stop = asyncio.Event()
    task = asyncio.create_task(
        watch(url, site, console=console, stop=stop, model=model, on_update=until, **options),
        name="pit-watch-under-test",
    )
    try:
        yield _Watching(model, until, console)
    finally:
        stop.set()
        await asyncio.wait_for(task, WAIT_S)


def _connected(model: PitModel) -> bool:
    return model.connection.state is BrokerLink.CONNECTED


async def test_watch_shows_retained_messages_and_a_live_round(mosquitto: MosquittoBroker) -> None:
    site = _site()
    await _publish(mosquitto, _retained(site))
    try:
        async with _watching(mosquitto.url, site) as pit:
            await pit.wait_view(
                lambda v: v.link is Link.ONLINE and v.state is not None and v.stats is not None
            )
            view = pit.view()
            assert view is not None
            assert view.state is not None
            assert view.status is not None
            assert (view.state.phase, view.state.dealer, view.status.outbox_depth) == (
                "dealing", "D-114", 2,
            )  # fmt: skip
            # Rounds, alerts and events are not retained: published while the pit listens.
            record = round_record(4242, site=site)
            raised = alert("a-77", "MISREAD", site=site, position=None, spot=None)
            await _publish(
                mosquitto,
                [
                    (topic("rounds", site=site), enc(record), False),
                    (topic("rounds", site=site), enc(record), False),  # resent: dropped
                    (topic("alerts", site=site), enc(raised), False),
                    (topic("events", site=site), enc(event(1, site=site)), False),
                    (topic("events", site=site), enc(event(4, site=site)), False),
                ],
            )
            await pit.wait_view(lambda v: v.events.received == 2)
            view = pit.view()
            assert view is not None
            assert [r.round_id for r in view.rounds] == ["4242"]
            assert [a.code for a in view.open_alerts] == ["MISREAD"]
            assert (view.duplicates, view.events.missing) == (1, 2)
        text = pit.console.export_text()
        assert f"{site}/{TABLE}" in text
        for shown in ("ONLINE", "dealing", "4242", "MISREAD", "rounds 77", "2 events missing"):
            assert shown in text, shown
    finally:
        await _publish(mosquitto, _cleared(site))


def _table_with_a_will(broker: MosquittoBroker, site: str) -> paho.Client:
    """A table's connection as docs/feed.md has it: a retained last will of online:false."""
    client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    client.will_set(topic("status", site=site), enc(last_will(site=site)), qos=1, retain=True)
    client.connect(broker.host, broker.port)
    client.loop_start()
    client.publish(topic("status", site=site), enc(status(site=site)), qos=1, retain=True)
    return client


def _die(client: paho.Client) -> None:
    """MQTT 5 reason 0x04: disconnect, and have the broker publish the will."""
    client.disconnect(reasoncode=ReasonCode(PacketTypes.DISCONNECT, identifier=4))
    client.loop_stop()


async def test_a_table_whose_link_dies_is_shown_offline(mosquitto: MosquittoBroker) -> None:
    site = _site()
    async with _watching(mosquitto.url, site) as pit:
        await pit.wait(_connected)
        table = await asyncio.to_thread(_table_with_a_will, mosquitto, site)
        try:
            await pit.wait_view(lambda v: v.link is Link.ONLINE)
        finally:
            await asyncio.to_thread(_die, table)
        await pit.wait_view(lambda v: v.link is Link.OFFLINE)
    assert "OFFLINE" in pit.console.export_text()
    await _publish(mosquitto, _cleared(site))


async def test_the_pit_reconnects_when_the_broker_comes_back(
    own_mosquitto: MosquittoBroker,
) -> None:
    site = _site()
    async with _watching(own_mosquitto.url, site) as pit:
        await pit.wait(_connected)
        own_mosquitto.stop()
        await pit.wait(lambda m: m.connection.state is BrokerLink.RETRYING)
        assert "retrying" in str(pit.model.connection.state)
        own_mosquitto.start()
        await pit.wait(_connected)
        # This broker keeps nothing across a restart: the table publishes again.
        await _publish(own_mosquitto, _retained(site))
        await pit.wait_view(lambda v: v.status is not None and v.status.outbox_depth == 2)


# ---------------------------------------------------------------- the command line


def test_once_prints_one_snapshot(
    mosquitto: MosquittoBroker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # the width a script asks for
    site = _site()
    asyncio.run(_publish(mosquitto, _retained(site) + _retained(site, "war-08")))
    try:
        code = cli.main(["pit", "--broker", mosquitto.url, "--site", site, "--once"])
        out = capsys.readouterr().out
        assert code == 0
        assert f"{site}/{TABLE} ONLINE" in out
        assert f"{site}/war-08 ONLINE" in out
        assert "2 tables, 2 online" in out
        assert "dealing" in out
    finally:
        asyncio.run(_publish(mosquitto, _cleared(site) + _cleared(site, "war-08")))


def test_once_with_no_broker_fails_with_a_message(
    capsys: pytest.CaptureFixture[str], refused_port: int
) -> None:
    url = f"mqtt://127.0.0.1:{refused_port}"
    assert cli.main(["pit", "--broker", url, "--once"]) == 1
    assert f"broker {url}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--password-file", "{open_secret}", "--username", "pit"], "readable by others"),
        (["--password-file", "{secret}"], "--password-file needs --username"),
        (["--password-file", "{missing}", "--username", "pit"], "cannot read"),
        (["--ca-file", "{secret}"], "--ca-file needs an mqtts://"),
        (["--prefix", "casino/{{site}}/table"], "--prefix"),
        (["--site", "a/b"], "--site"),
    ],
    ids=["secret-readable", "no-username", "no-file", "ca-without-tls", "prefix", "site"],
)
def test_bad_options_are_refused_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    paths = {
        "open_secret": _secret(tmp_path / "open.secret", 0o644),
        "secret": _secret(tmp_path / "pit.secret", 0o600),
        "missing": tmp_path / "nowhere",
    }
    args = [a.format(**paths) for a in extra]
    assert cli.main(["pit", "--broker", "mqtt://127.0.0.1:1", "--once", *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("url", ["http://pit:80", "mqtt://", "mqtt://host:99999", "mqtt://h/x"])
def test_bad_broker_urls_are_refused(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["pit", "--broker", url, "--once"]) == 2
    assert "--broker" in capsys.readouterr().err
