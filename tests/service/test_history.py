"""``table-controller history``: hand records rebuilt from the journal (§(i)(4)).

Twelve rounds are played through the production service (a war, a surrender, a void tie
wager, a misdeal voided, wins and losses), and a thirteenth is left in progress. The command,
run beside the service on the same journal, must give back the very records that were
published, recall more than the last ten games, and show every card and wager by hand.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.lineframe.cards import Card
from table_controller.cli import main
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import TableRig, TableSpec, config_toml
from table_controller.service.journal import Journal
from table_controller.tools.history import money

# Round 1: burn; P1 7H v 7S ties and goes to war: three burns, KH v 5D wins the war.
# Round 2: P1 AS v 2D wins; P2 has a tie wager alone (void, §(h)(3)(iii)).
# Round 3: P1 6C v 6D ties and surrenders.  Round 4: P1 gets 3H, then a misdeal is voided.
# Rounds 5-12: P1 against the dealer, win and lose in turn.  Round 13: P1's TC, in progress.
SIMPLE = [("KC", "QD"), ("2S", "JH"), ("AD", "TC"), ("4H", "8S")] * 2
ORDER = [
    "9C",
    "7H",
    "7S",
    "2C",
    "3C",
    "4C",
    "KH",
    "5D",
    "AS",
    "2D",
    "6C",
    "6D",
    "3H",
    *(c for pair in SIMPLE for c in pair),
    "TC",
    "QS",
]
INITIAL, TIE = 2500, 500


def _history(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["history", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _rows(block: str, pattern: str) -> list[tuple[str, ...]]:
    return [m.groups() for m in re.finditer(pattern, block, flags=re.MULTILINE)]


CARD_ROW = r"^\s+(\d+)\s+(\S+)\s+(burn|position|dealer|war_burn|war_position|war_dealer)\b"
WAGER_ROW = r"^\s+(initial|tie|war|war_tie)\s+(\S+)\s+(\S+)\s+(\w+)\s+(\S+)\s+(\S+)$"


async def _round(rig: TableRig, draws: int) -> None:
    assert await rig.press("NO_MORE_BETS") is None
    for _ in range(draws):
        rig.shoe.draw()


async def _play(rig: TableRig) -> None:
    """Rounds 1-12 as ORDER says, and round 13 dealt one card."""
    await rig.start_controller()
    await rig.wait_online()
    assert await rig.press("SHUFFLED") is None
    assert await rig.press("DEALER", "D-114") is None
    rig.bet(1, initial=INITIAL, tie=TIE)
    await rig.wait_wagers({1: {"initial": INITIAL, "tie": TIE}})
    await _round(rig, 3)
    await rig.wait_state(lambda s: s["phase"] == "tie_decision")
    rig.bet(1, initial=INITIAL, tie=TIE, war=INITIAL)
    await rig.wait_wagers({1: {"initial": INITIAL, "tie": TIE, "war": INITIAL}})
    assert await rig.press("WAR", 1) is None
    for _ in range(5):
        rig.shoe.draw()
    await rig.wait_rounds(1)

    rig.bet(1, initial=INITIAL)
    rig.bet(2, tie=100)
    await rig.wait_wagers({1: {"initial": INITIAL}, 2: {"tie": 100}})
    await _round(rig, 2)
    await rig.wait_rounds(2)
    rig.bet(2)
    await rig.wait_wagers({1: {"initial": INITIAL}})

    await _round(rig, 2)
    await rig.wait_state(lambda s: s["phase"] == "tie_decision")
    assert await rig.press("SURRENDER", 1) is None
    await rig.wait_rounds(3)

    await _round(rig, 1)
    await rig.wait_state(lambda s: bool(s["positions"]) and s["positions"][0]["cards"] == ["3H"])
    assert await rig.press("VOID_ROUND") is None
    await rig.wait_rounds(4)

    for r in range(5, 13):
        await rig.wait_state(lambda s: s["phase"] == "betting")
        await _round(rig, 2)
        await rig.wait_rounds(r)

    await _round(rig, 1)
    await rig.wait_state(lambda s: s["round_id"] == 13 and bool(s["positions"][0]["cards"]))


async def test_history_rebuilds_what_was_published(
    mosquitto: MosquittoBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cards = [Card.parse(c) for c in ORDER]
    spec = TableSpec(table_id="war-history", cards=cards, cover_after=len(cards), rules="ny")
    async with TableRig(mosquitto.url, tmp_path, spec) as rig:
        await _play(rig)
        assert rig.observer is not None
        published = list(rig.observer.of("rounds"))
        config = str(rig.config_path)
        # Beside the running service, on its live journal.
        code, out, _ = _history(capsys, "--config", config, "--json")
        assert code == 0
        last_ten = json.loads(out)
        await rig.stop_controller()

    assert [r["round_id"] for r in published] == list(range(1, 13))
    # The last ten games, exactly as published (same ids, same timestamps).
    assert last_ten == published[-10:]

    code, out, _ = _history(capsys, "--config", config, "--json", "--last", "3")
    assert (code, json.loads(out)) == (0, published[-3:])
    code, out, _ = _history(capsys, "--config", config, "--json", "--round", "1")
    assert (code, json.loads(out)) == (0, published[:1])

    # The war round by hand: every card in deal order with its role, every wager settled.
    code, out, _ = _history(capsys, "--config", config, "--round", "1")
    assert code == 0
    assert out.startswith("round 1  rules ny")
    assert "dealer D-114" in out
    assert _rows(out, CARD_ROW) == [
        ("1", "9C", "burn"),
        ("2", "7H", "position"),
        ("3", "7S", "dealer"),
        ("4", "2C", "war_burn"),
        ("5", "3C", "war_burn"),
        ("6", "4C", "war_burn"),
        ("7", "KH", "war_position"),
        ("8", "5D", "war_dealer"),
    ]
    # §(i)(5), §(j): initial collected, tie 10:1, war 2:1, the war-deal tie wager lost.
    assert _rows(out, WAGER_ROW) == [
        ("initial", "25.00", "1:1", "lose", "-1", "-25.00"),
        ("tie", "5.00", "10:1", "win", "+10", "+50.00"),
        ("war", "25.00", "2:1", "win", "+2", "+50.00"),
        ("war_tie", "5.00", "10:1", "lose", "-1", "-5.00"),
    ]
    assert "position 1: card 7H (tie), goes to war: war card KH (win)" in out
    assert "players' net +70.00 USD" in out

    # The default: the last ten rounds, one block each, then the round in progress.
    code, out, _ = _history(capsys, "--config", config)
    assert code == 0
    blocks = out.rstrip("\n").split("\n\n")
    assert [b.split()[1] for b in blocks] == [str(r) for r in range(3, 14)]
    surrender, void_round = blocks[0], blocks[1]
    assert "position 1: card 6C (tie), surrenders" in surrender
    assert _rows(surrender, WAGER_ROW) == [
        # §(i)(3)(i): half the initial wager is surrendered.
        ("initial", "25.00", "1:1", "surrender", "-0.5", "-12.50"),
    ]
    assert "VOID: voided by the dealer" in void_round
    assert _rows(void_round, WAGER_ROW) == [("initial", "25.00", "1:1", "void", "0", "0.00")]
    assert _rows(void_round, CARD_ROW) == [("13", "3H", "position")]
    assert blocks[-1].startswith("round 13 in progress: phase dealing")
    assert _rows(blocks[-1], CARD_ROW) == [("30", "TC", "position")]

    # Round 2 is older than the last ten: --round still finds it, with the void tie wager.
    code, out, _ = _history(capsys, "--config", config, "--round", "2")
    assert code == 0
    assert "position 2: no card (tie wager without an initial wager: void)" in out
    assert ("tie", "1.00", "10:1", "void", "0", "0.00") in _rows(out, WAGER_ROW)

    # Asked for a round that has no record: the one in progress, or one never played.
    code, _, err = _history(capsys, "--config", config, "--round", "13")
    assert code == 1
    assert "round 13 in progress" in err
    code, _, err = _history(capsys, "--config", config, "--round", "99")
    assert (code, err.strip()) == (1, "table-controller history: no round 99 in the journal")


def _offline_config(tmp_path: Path, journal: Path) -> Path:
    path = tmp_path / "table.toml"
    path.write_text(
        config_toml(
            TableSpec(),
            shoe="socket://127.0.0.1:1",
            console="socket://127.0.0.1:2",
            sensors="simusb://127.0.0.1:3",
            broker="mqtt://127.0.0.1:4",
            storage=journal,
        ),
        encoding="utf-8",
    )
    return path


def test_history_of_an_empty_or_missing_or_corrupt_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "war-07.sqlite3"
    config = str(_offline_config(tmp_path, journal))

    code, _, err = _history(capsys, "--config", config)
    assert code == 2
    assert "no journal there" in err

    with Journal(journal):
        pass
    assert _history(capsys, "--config", config) == (0, "no rounds in the journal yet\n", "")
    assert _history(capsys, "--config", config, "--json") == (0, "[]\n", "")

    with Journal(journal) as j:
        j.record({"type": "card_read", "at": datetime.now(UTC).isoformat(), "n": "x"}, [])
    code, _, err = _history(capsys, "--config", config)
    assert code == 2
    assert "damaged (input 1:" in err
    assert "'n'" in err

    code, _, err = _history(capsys, "--config", str(tmp_path / "nowhere.toml"))
    assert code == 2
    assert "cannot read" in err


@pytest.mark.parametrize(
    "args", [["--last", "0"], ["--round", "x"], ["--round", "1", "--last", "2"]]
)
def test_history_refuses_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["history", "--config", str(tmp_path / "t.toml"), *args])
    assert exc.value.code == 2


@settings(max_examples=200)
@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_money_reads_back_as_the_same_cents(cents: int) -> None:
    text = money(cents)
    assert re.fullmatch(r"-?\d+\.\d\d", text)
    whole, part = text.lstrip("-").split(".")
    sign = -1 if text.startswith("-") else 1
    assert sign * (int(whole) * 100 + int(part)) == cents
