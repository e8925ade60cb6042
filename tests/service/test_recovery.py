"""A power cut mid-round: the controller SIGKILLed in each phase and restarted on its journal.

The controller runs as a child process (``table-controller run``) against a real Mosquitto and
the three simulators. It is killed once, in the phase the test names, while the table goes on
(a bet placed, a card drawn, a button pressed while it is down); a new process on the same
config and journal must resume that same round — cards dealt, wagers latched, decisions made,
open alerts still open — and finish it exactly as docs/rules.md and §5324.22 say, with the event
``seq`` continuing and nothing lost on MQTT.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from drivers.console.frames import AckFrame
from drivers.lineframe.cards import Card
from table_controller.feed.payloads import parse_payload
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import Observer, TableRig, TableSpec
from table_controller.tools import history

# A child controller process needs time to import and connect.
STARTUP_S = 20.0

# One round that visits every phase, then a short second round.
#  1 burn (§(h)(1)), 2-4 positions 1-3 (read 3 misread, keyed in as 7D), 5 dealer:
#  positions 1 and 2 tie the dealer's 7S, position 3 loses. Position 2 surrenders,
#  position 1 goes to war: 6-8 three burns (§(i)(5)(i)), 9 its war card, 10 the dealer's.
#  Round 2: 11 position 1, 12 the dealer.
ORDER = [
    Card.parse(c)
    for c in ("9C", "7H", "7D", "5C", "7S", "2C", "3C", "4C", "KH", "5D", "AS", "2D", "QC")
]
BET_1 = {"initial": 2500, "tie": 500}
BET_2 = {"initial": 1000, "tie": 200}
BET_3 = {"initial": 500}
WAR_1 = 2500


def _shoe_card(n: int, role: str, position: int | None = None) -> dict[str, Any]:
    return {
        "n": n,
        "card": str(ORDER[n - 1]),
        "role": role,
        "position": position,
        "source": "shoe",
    }


def _wager(spot: str, amount: int, odds: str, result: str, npu: float) -> dict[str, Any]:
    return {
        "spot": spot,
        "amount": amount,
        "odds": odds,
        "result": result,
        "net_per_unit": npu,
        "net": int(amount * npu),
    }


# The round settled by hand from §5324.22 (i) and (j):
EXPECTED_CARDS = [
    _shoe_card(1, "burn"),
    _shoe_card(2, "position", 1),
    {**_shoe_card(3, "position", 2), "source": "manual"},
    _shoe_card(4, "position", 3),
    _shoe_card(5, "dealer"),
    _shoe_card(6, "war_burn"),
    _shoe_card(7, "war_burn"),
    _shoe_card(8, "war_burn"),
    _shoe_card(9, "war_position", 1),
    _shoe_card(10, "war_dealer"),
]
EXPECTED_POSITIONS: list[dict[str, Any]] = [
    {
        "position": 1,
        "card": "7H",
        "outcome": "tie",
        "decision": "war",
        "war_card": "KH",
        "war_outcome": "win",
        "wagers": [
            # §(i)(5): the whole initial wager is collected when the player goes to war.
            _wager("initial", 2500, "1:1", "lose", -1),
            # §(i)(1)(iii), §(j)(2): a tie hand wins the tie wager at 10:1.
            _wager("tie", 500, "10:1", "win", 10),
            # §(i)(5)(ii)(b), §(j)(3): a higher war card wins the war wager at 2:1.
            _wager("war", WAR_1, "2:1", "win", 2),
            # §(i)(5): chips on the tie spot at the decision ride on the war deal, and lose.
            _wager("war_tie", 500, "10:1", "lose", -1),
        ],
        "net": -2500 + 5000 + 5000 - 500,
    },
    {
        "position": 2,
        "card": "7D",
        "outcome": "tie",
        "decision": "surrender",
        "war_card": None,
        "war_outcome": None,
        "wagers": [
            # §(i)(3)(i): half the initial wager is surrendered.
            _wager("initial", 1000, "1:1", "surrender", -0.5),
            _wager("tie", 200, "10:1", "win", 10),
        ],
        "net": -500 + 2000,
    },
    {
        "position": 3,
        "card": "5C",
        "outcome": "lose",
        "decision": None,
        "war_card": None,
        "war_outcome": None,
        "wagers": [_wager("initial", 500, "1:1", "lose", -1)],
        "net": -500,
    },
]

CUTS = [
    pytest.param("betting", False, id="betting"),
    pytest.param("dealing", False, id="dealing"),
    pytest.param("tie_decision", False, id="tie_decision"),
    pytest.param("war_dealing", False, id="war_dealing"),
    # The console restarts too: its new press 1 must not get the old press 1's answer.
    pytest.param("tie_decision", True, id="tie_decision-console_restarted"),
]


def _open_alert_ids(obs: Observer, code: str) -> list[str]:
    """Alerts of ``code`` raised and not (yet) seen resolved."""
    raised = [a["alert"] for a in obs.of("alerts") if a["code"] == code]
    resolved = {a["alert"] for a in obs.of("alerts") if a["resolved_by"] is not None}
    return [a for a in raised if a not in resolved]


def _card_seen(n: int) -> Callable[[Observer], bool]:
    return lambda o: any(e["type"] == "card" and e["n"] == n for e in o.of("events"))


def _journal_ids(path: Path) -> dict[str, str]:
    """Every non-retained message the journal's outbox ever held: id -> kind."""
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        # The journal is a write-ahead log: a commit survives a power cut.
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = db.execute("SELECT id, kind FROM outbox WHERE retain = 0").fetchall()
    finally:
        db.close()
    return {str(i): str(k) for i, k in rows}


def _history(config: Path) -> str:
    """``table-controller history --config CONFIG`` (human output)."""
    parser = argparse.ArgumentParser()
    history.configure(parser)
    out = io.StringIO()
    assert history.run(parser.parse_args(["--config", str(config)]), out=out, err=out) == 0
    return out.getvalue()


async def _answer(rig: TableRig, k: int, timeout: float = STARTUP_S) -> str | None:
    """The answer to press ``k`` (None for ACK, else the NAK reason)."""
    async with asyncio.timeout(timeout):
        got = await rig.console.answer(k)
    return None if isinstance(got, AckFrame) else got.reason


class PowerCut:
    """Kills the controller at one named phase; elsewhere lets the table go on.

    ``console_too``: the console loses power as well, so its press numbering starts
    again while the controller is down (docs/devices.md).
    """

    def __init__(self, rig: TableRig, phase: str, *, console_too: bool = False) -> None:
        self.rig = rig
        self.phase = phase
        self.console_too = console_too
        self.cuts = 0
        self.history_while_down = ""

    async def at(self, phase: str, meanwhile: Callable[[], Any]) -> Any:
        """``meanwhile`` is what happens at the table next: while the controller is down
        when this is the phase to cut, else at once. Returns what it returned."""
        if phase != self.phase:
            return meanwhile()
        rig = self.rig
        rig.kill_controller_process()
        self.cuts += 1
        # The broker publishes the table's last will: the table is seen offline.
        await rig.wait_status(lambda s: not s["online"])
        # What the journal holds of the round cut short, read as the operator would.
        self.history_while_down = _history(rig.config_path)
        if self.console_too:
            rig.console.restart()
        result = meanwhile()
        rig.start_controller_process()
        await rig.wait_online(STARTUP_S)
        return result


async def _play_round_one(rig: TableRig, cut: PowerCut) -> str:
    """Round 1, with a power cut in ``cut.phase``; returns the MISREAD alert's id."""
    assert await rig.press("SHUFFLED") is None
    assert await rig.press("DEALER", "D-114") is None
    rig.bet(1, **BET_1)
    rig.bet(2, **BET_2)
    await rig.wait_wagers({1: BET_1, 2: BET_2})
    await cut.at("betting", lambda: rig.bet(3, **BET_3))
    await rig.wait_wagers({1: BET_1, 2: BET_2, 3: BET_3})

    assert await rig.press("NO_MORE_BETS") is None
    rig.shoe.draw()  # the burn card
    rig.shoe.draw()  # position 1
    rig.shoe.draw(misread=True)  # position 2: MISREAD holds the round
    await rig.wait(lambda o: bool(_open_alert_ids(o, "MISREAD")))
    assert rig.observer is not None
    (misread,) = _open_alert_ids(rig.observer, "MISREAD")
    await rig.wait_state(lambda s: s["held"] and s["phase"] == "dealing")
    await cut.at("dealing", rig.shoe.draw)  # position 3
    rig.shoe.draw()  # the dealer
    # Still held after a restart: the deal is complete, yet nothing is settled.
    await rig.wait_state(
        lambda s: s["dealer_cards"] == ["7S"] and s["held"] and s["phase"] == "dealing"
    )
    assert _open_alert_ids(rig.observer, "MISREAD") == [misread]
    assert await rig.press("CARD", "7D") is None
    await rig.wait_state(lambda s: s["phase"] == "tie_decision" and not s["held"])

    assert await rig.press("SURRENDER", 2) is None
    rig.bet(1, **BET_1, war=WAR_1)
    await rig.wait_wagers({1: {**BET_1, "war": WAR_1}, 2: BET_2, 3: BET_3})
    k = await cut.at("tie_decision", lambda: rig.console.press("WAR", 1))
    assert await _answer(rig, k) is None
    await rig.wait_state(lambda s: s["phase"] == "war_dealing")

    rig.shoe.draw()  # war burn
    rig.shoe.draw()  # war burn
    await rig.wait(_card_seen(7))
    await cut.at("war_dealing", lambda: (rig.shoe.draw(), rig.shoe.draw()))  # burn, war card
    rig.shoe.draw()  # the dealer's war card
    return misread


async def _play_round_two(rig: TableRig) -> None:
    rig.bet(1, initial=2500)
    rig.bet(2)
    rig.bet(3)
    await rig.wait_wagers({1: {"initial": 2500}})
    assert await rig.press("NO_MORE_BETS") is None
    rig.shoe.draw()
    rig.shoe.draw()


@pytest.mark.parametrize(("phase", "console_too"), CUTS)
async def test_power_cut_resumes_the_same_round(
    own_mosquitto: MosquittoBroker, tmp_path: Path, phase: str, console_too: bool
) -> None:
    spec = TableSpec(cards=ORDER, cover_after=len(ORDER), rules="ny")
    async with TableRig(own_mosquitto.url, tmp_path, spec) as rig:
        rig.start_controller_process()
        await rig.wait_online(STARTUP_S)
        cut = PowerCut(rig, phase, console_too=console_too)
        misread = await _play_round_one(rig, cut)
        (record,) = await rig.wait_rounds(1)
        await _play_round_two(rig)
        records = await rig.wait_rounds(2)
        # A clean stop, so the journal can be read whole.
        proc = rig.process
        assert proc is not None
        rig.kill_controller_process(signal.SIGTERM)
        assert proc.returncode == 0
        journal = _journal_ids(rig.journal_path)
        assert rig.observer is not None
        obs = rig.observer
        await rig.wait(lambda o: set(journal) <= o.ids)
        answers = dict(rig.console.answers)

    assert cut.cuts == 1
    # Cut short, the round has no record yet; the journal already shows its cards (§(i)(4)).
    if phase == "betting":
        assert cut.history_while_down == "no rounds in the journal yet\n"
    else:
        assert cut.history_while_down.startswith(f"round 1 in progress: phase {phase}")
        assert "9C    burn" in cut.history_while_down
    # The round resumed is the round cut: same id, every card in its place, settled exactly.
    parse_payload(record)
    assert record["round_id"] == 1
    assert record["dealer"] == "D-114"
    assert record["cards"] == EXPECTED_CARDS
    assert (record["dealer_card"], record["dealer_war_card"]) == ("7S", "5D")
    assert record["positions"] == EXPECTED_POSITIONS
    assert record["net"] == sum(p["net"] for p in EXPECTED_POSITIONS)
    assert record["void"] is False
    assert record["alerts"] == [misread]
    # The MISREAD, open across the cut, was resolved by the card keyed in.
    misread_msgs = [a for a in obs.of("alerts") if a["alert"] == misread]
    assert [a["resolved_by"] for a in misread_msgs] == [None, "CARD"]
    # The next round takes the next id.
    assert records[1]["round_id"] == 2
    assert [(c["card"], c["role"]) for c in records[1]["cards"]] == [
        ("AS", "position"),
        ("2D", "dealer"),
    ]
    assert records[1]["net"] == 2500

    # Nothing lost, nothing doubled: one epoch, seq 1..N without a gap, each once.
    events = obs.of("events")
    assert len({e["epoch"] for e in events}) == 1
    seqs = sorted(e["seq"] for e in events)
    assert seqs == list(range(1, len(events) + 1))
    # Every card event once, in order, with the burn cards' ranks hidden (§(h)(1)); the
    # misread card twice: unknown when read, then as keyed in.
    cards = [
        (e["round_id"], e["n"], e["card"], e["role"], e["source"])
        for e in sorted(events, key=lambda e: int(e["seq"]))
        if e["type"] == "card"
    ]
    assert cards == [
        (1, 1, None, "burn", "shoe"),
        (1, 2, "7H", "position", "shoe"),
        (1, 3, None, "position", "shoe"),
        (1, 4, "5C", "position", "shoe"),
        (1, 5, "7S", "dealer", "shoe"),
        (1, 3, "7D", "position", "manual"),
        (1, 6, None, "war_burn", "shoe"),
        (1, 7, None, "war_burn", "shoe"),
        (1, 8, None, "war_burn", "shoe"),
        (1, 9, "KH", "war_position", "shoe"),
        (1, 10, "5D", "war_dealer", "shoe"),
        (2, 11, "AS", "position", "shoe"),
        (2, 12, "2D", "dealer", "shoe"),
    ]
    # Every non-retained message the journal holds reached the subscriber.
    assert set(journal) <= obs.ids
    assert sum(1 for kind in journal.values() if kind == "rounds") == 2
    # Every press was answered, and a press answered twice got the same answer twice.
    for k, given in answers.items():
        assert given, f"press {k} unanswered"
        assert len(set(given)) == 1, f"press {k} answered differently: {given}"
