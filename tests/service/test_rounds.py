"""Rounds played through the simulators over real transports arrive on MQTT per spec."""

from __future__ import annotations

from pathlib import Path

from drivers.lineframe.cards import Card
from table_controller.feed.payloads import parse_payload
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import TableRig, TableSpec


def _cards(*text: str) -> list[Card]:
    return [Card.parse(t) for t in text]


async def _online(rig: TableRig) -> None:
    def ready(obs: object) -> bool:
        status = rig.observer.last("status") if rig.observer else None
        return bool(
            status
            and status["online"]
            and all(d["state"] == "ok" for d in status["devices"].values())
        )

    await rig.wait(lambda _: ready(_))


async def test_ny_war_round_is_published_exactly(
    mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    """§(i)(5): a tie goes to war; 3 burns; war won pays 2:1 and the initial is collected."""
    order = _cards("9C", "7H", "7S", "2C", "3C", "4C", "KH", "5D", "8D")
    async with TableRig(
        mosquitto.url, tmp_path, TableSpec(cards=order, cover_after=len(order), rules="ny")
    ) as rig:
        await rig.start_controller()
        await _online(rig)
        assert await rig.press("SHUFFLED") is None
        assert await rig.press("DEALER", "D-114") is None
        rig.bet(1, initial=2500, tie=500)
        await rig.wait_wagers({1: {"initial": 2500, "tie": 500}})
        assert await rig.press("NO_MORE_BETS") is None
        for _ in range(3):
            rig.shoe.draw()
        await rig.wait_state(lambda s: s["phase"] == "tie_decision")
        assert await rig.press("WAR", 1) == "NO_WAR_WAGER"
        rig.bet(1, initial=2500, tie=500, war=2500)
        await rig.wait_wagers({1: {"initial": 2500, "tie": 500, "war": 2500}})
        assert await rig.press("WAR", 1) is None
        for _ in range(5):
            rig.shoe.draw()
        (record,) = await rig.wait_rounds(1)

    parse_payload(record)  # validates the whole war-round/1 payload
    assert record["dealer"] == "D-114"
    assert record["rules"] == "ny"
    assert [(c["card"], c["role"]) for c in record["cards"]] == [
        ("9C", "burn"),
        ("7H", "position"),
        ("7S", "dealer"),
        ("2C", "war_burn"),
        ("3C", "war_burn"),
        ("4C", "war_burn"),
        ("KH", "war_position"),
        ("5D", "war_dealer"),
    ]
    (pos,) = record["positions"]
    assert (pos["outcome"], pos["decision"], pos["war_outcome"]) == ("tie", "war", "win")
    wagers = {
        w["spot"]: (w["result"], w["odds"], w["net_per_unit"], w["net"]) for w in pos["wagers"]
    }
    assert wagers == {
        "initial": ("lose", "1:1", -1, -2500),
        "tie": ("win", "10:1", 10, 5000),
        "war": ("win", "2:1", 2, 5000),
        # §(i)(5): chips left on the tie spot at the decision ride on the war deal.
        "war_tie": ("lose", "10:1", -1, -500),
    }
    assert pos["net"] == record["net"] == -2500 + 5000 + 5000 - 500
