"""A device unplugged mid-round holds the round; plugged back, play resumes (docs/rules.md alerts).

Unplugging is real: the shoe's and the console's simulators stop serving their TCP port, the
sensor board's simulator closes its simusb connection and refuses new ones. The controller is
the production service; its alerts, status and state are read from a real Mosquitto.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drivers.lineframe.cards import Card
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import Observer, TableRig, TableSpec

DEVICES = ["shoe", "console", "sensors"]
# Round 1: a burn card, position 1's king, the dealer's five: position 1 wins 1:1.
# Round 2: position 1's two against the dealer's ace: it loses.
ORDER = [Card.parse(c) for c in ("9C", "KH", "5D", "2C", "AS", "QD")]
WAGER = 1000


def _spec() -> TableSpec:
    return TableSpec(cards=ORDER, cover_after=len(ORDER), rules="ny")


async def unplug(rig: TableRig, device: str) -> None:
    if device == "sensors":
        await rig.board.unplug()
    elif device == "shoe":
        await rig.shoe.stop_serving()
    else:
        await rig.console.stop_serving()


async def replug(rig: TableRig, device: str) -> None:
    """Serve the device again on the URL the controller's config names."""
    if device == "sensors":
        await rig.board.replug()
        return
    sim = rig.shoe if device == "shoe" else rig.console
    assert sim.url is not None
    port = int(sim.url.rsplit(":", 1)[1])
    await sim.serve_tcp(port=port)


def _alerts(obs: Observer, code: str) -> list[dict[str, Any]]:
    return [a for a in obs.of("alerts") if a["code"] == code]


def _device_alerts(obs: Observer, code: str, device: str) -> list[dict[str, Any]]:
    return [a for a in _alerts(obs, code) if device in a["message"]]


async def _start_round(rig: TableRig) -> None:
    """Shoe, dealer, one wager latched, the burn card and position 1's card dealt."""
    assert await rig.press("SHUFFLED") is None
    assert await rig.press("DEALER", "D-7") is None
    rig.bet(1, initial=WAGER)
    await rig.wait_wagers({1: {"initial": WAGER}})
    assert await rig.press("NO_MORE_BETS") is None
    rig.shoe.draw()
    rig.shoe.draw()
    await rig.wait_state(lambda s: s["positions"] and s["positions"][0]["cards"] == ["KH"])


@pytest.mark.parametrize("device", DEVICES)
async def test_unplugged_device_holds_the_round_until_it_is_back(
    own_mosquitto: MosquittoBroker, tmp_path: Path, device: str
) -> None:
    async with TableRig(own_mosquitto.url, tmp_path, _spec()) as rig:
        await rig.start_controller()
        await rig.wait_online()
        await _start_round(rig)

        await unplug(rig, device)
        await rig.wait(lambda o: bool(_device_alerts(o, "DEVICE_OFFLINE", device)))
        status = await rig.wait_status(lambda s: s["devices"][device]["state"] == "offline")
        assert status["online"] is True
        assert {name for name, d in status["devices"].items() if d["state"] != "ok"} == {device}
        await rig.wait_state(lambda s: s["held"])

        # The dealer deals the dealer's card meanwhile. A shoe that is away keeps it for
        # the controller's RESEND; otherwise the card is placed, but nothing is settled.
        rig.shoe.draw()
        if device != "shoe":
            state = await rig.wait_state(lambda s: s["dealer_cards"] == ["5D"])
            assert (state["phase"], state["held"]) == ("dealing", True)
        assert rig.observer is not None
        assert rig.observer.of("rounds") == []

        await replug(rig, device)
        await rig.wait(lambda o: bool(_device_alerts(o, "DEVICE_ONLINE", device)))
        (record,) = await rig.wait_rounds(1)
        await rig.wait_status(lambda s: s["devices"][device]["state"] == "ok")
        state = await rig.wait_state(lambda s: s["phase"] == "betting" and not s["held"])
        assert state["round_id"] == 2

        # Play resumes: the next round is dealt and settled as usual.
        assert await rig.press("NO_MORE_BETS") is None
        rig.shoe.draw()
        rig.shoe.draw()
        records = await rig.wait_rounds(2)
        obs = rig.observer
        await rig.stop_controller()

    offline = _device_alerts(obs, "DEVICE_OFFLINE", device)
    online = _device_alerts(obs, "DEVICE_ONLINE", device)
    # One alert, raised then resolved by the device's return (docs/rules.md).
    assert [(a["severity"], a["resolved_by"]) for a in offline] == [
        ("critical", None),
        ("critical", "DEVICE_ONLINE"),
    ]
    assert len({a["alert"] for a in offline}) == 1
    assert [(a["severity"], a["resolved_by"]) for a in online] == [("info", None)]
    # The round held across the loss is the one recorded, settled only after the return.
    assert record["round_id"] == 1
    assert [(c["card"], c["role"]) for c in record["cards"]] == [
        ("9C", "burn"),
        ("KH", "position"),
        ("5D", "dealer"),
    ]
    assert offline[0]["alert"] in record["alerts"]
    (pos,) = record["positions"]
    assert (pos["outcome"], pos["net"]) == ("win", WAGER)
    assert record["ended"] >= offline[1]["ts"]
    assert (records[1]["round_id"], records[1]["net"]) == (2, -WAGER)


async def test_device_silent_at_restart_is_never_reported_ok(
    own_mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    """The journal says the shoe was online; the restarted service has not heard it yet.

    The shoe accepts the connection but says nothing (hung), so the driver gives it up
    only after the 3 s heartbeat timeout; until then status must not call it ok.
    """
    async with TableRig(own_mosquitto.url, tmp_path, _spec()) as rig:
        await rig.start_controller()
        await rig.wait_online()
        await _start_round(rig)
        await rig.stop_controller()
        await rig.wait_status(lambda s: not s["online"])
        assert rig.observer is not None
        first_new = len(rig.observer.of("status"))

        rig.shoe.hang()
        await rig.start_controller()
        await rig.wait(lambda o: bool(_device_alerts(o, "DEVICE_OFFLINE", "shoe")))
        await rig.wait_state(lambda s: s["held"])
        rig.shoe.resume()
        await rig.wait_online()
        rig.shoe.draw()
        (record,) = await rig.wait_rounds(1)
        statuses = rig.observer.of("status")[first_new:]
        await rig.stop_controller()

    # Until the shoe spoke again, no status of the new run claimed it was there.
    back = next(i for i, s in enumerate(statuses) if s["devices"]["shoe"]["state"] == "ok")
    assert back > 0
    assert all(s["devices"]["shoe"]["state"] == "offline" for s in statuses[:back])
    assert statuses[0]["online"] is True
    assert record["round_id"] == 1
    assert [(p["outcome"], p["net"]) for p in record["positions"]] == [("win", WAGER)]
