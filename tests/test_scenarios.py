"""Scenario files: every shipped scenario passes against the real controller, and the
runner reports what it saw when an expectation is wrong or a file is malformed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.cli import main
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.scenario import (
    ScenarioError,
    Status,
    format_result,
    load_scenario,
    parse_scenario,
    run_scenario,
    shipped_scenarios,
)

SHIPPED = shipped_scenarios()


def test_scenarios_are_shipped_with_the_package() -> None:
    names = {p.stem for p in SHIPPED}
    # One file per alert code of docs/rules.md's table at least mentions it in an expectation.
    codes = [
        "PAST_POSTING",
        "WAGER_REMOVED",
        "LATE_WAGER",
        "FOREIGN_CARD",
        "MISREAD",
        "SHOE_READ_GAP",
        "UNEXPECTED_CARD",
        "DEVICE_OFFLINE",
        "DEVICE_ONLINE",
        "SENSOR_FAULT",
        "WAR_WAGER_MISMATCH",
        "WAGER_OUT_OF_LIMITS",
        "BROKER_REFUSED",
        "SHOE_FAULT",
        "NO_MORE_BETS_MISSING",
    ]
    text = "\n".join(p.read_text(encoding="utf-8") for p in SHIPPED)
    assert [c for c in codes if f"code: {c}" not in text] == []
    assert {"uk_war_accounting", "standard_war_accounting", "void_round"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
async def test_shipped_scenario(path: Path, mosquitto: MosquittoBroker) -> None:
    result = await run_scenario(load_scenario(path), broker_url=mosquitto.url)
    assert result.results, "the scenario checked nothing"
    assert result.passed, format_result(result, verbose=True)


WRONG = """\
table: {rules: ny}
shoe: [9C, 8H, 4S]
steps:
  - press: SHUFFLED
    expect: NAK NOT_NOW
  - bet: {position: 1, initial: 1000}
  - press: NO_MORE_BETS
  - draw: 3
  - expect_round:
      cards: [9C burn, 4S position 1, 8H dealer]
      positions: {1: {card: 8H, initial: {result: win, net: 2000}}}
  - expect_alert: {code: MISREAD}
    timeout: 0.3
  - expect_phase: betting
  - draw: [KD]
  - expect_phase: betting
"""


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


async def test_wrong_expectations_are_reported_with_what_was_seen(
    mosquitto: MosquittoBroker,
) -> None:
    result = await run_scenario(parse_scenario(WRONG, name="wrong"), broker_url=mosquitto.url)
    by_step = {r.number: r for r in result.results}
    assert not result.passed
    # SHUFFLED between rounds is accepted: the expectation of a NAK fails.
    assert (by_step[1].status, by_step[1].detail) == (Status.FAIL, "answered ACK")
    # A 1:1 initial wager of 1000 wins 1000; the cards went 8H to P1, 4S to the dealer.
    round_check = by_step[5]
    assert round_check.status is Status.FAIL
    assert round_check.line == _line(WRONG, "- expect_round")
    assert "positions.1.initial.net: expected 2000, saw 1000" in round_check.detail
    assert "first difference at card 2" in round_check.detail
    assert "saw [9C burn, 8H position 1, 4S dealer]" in round_check.detail
    assert "positions.1.card" not in round_check.detail
    assert by_step[6].status is Status.FAIL
    assert by_step[6].detail.startswith("not seen within 0.3 s; saw ")
    assert by_step[7].status is Status.PASS
    # An action that cannot be carried out ends the scenario; the cover card follows
    # the last card of a shoe list without COVER.
    assert by_step[8].status is Status.FAIL
    assert by_step[8].detail.startswith("the shoe's next card is COVER, not KD")
    assert 9 not in by_step
    report = format_result(result)
    assert "FAIL  wrong" in report
    assert f"step 5 (line {round_check.line}) expect_round: round 1: " in report
    assert "step 7" not in report  # passed steps are listed only when verbose


MALFORMED = [
    (
        "steps:\n  - press: SHUFFLED\n  - bet: {position: one, initial: 100}\n",
        ["line 3", "step 2 (bet)", "bet.position", "valid integer"],
    ),
    (
        "steps:\n  - prss: SHUFFLED\n",
        ["line 2", "step 1", "exactly one of: bet, press, draw"],
    ),
    (
        "steps:\n  - press: SHUFFLED\n    draw: 1\n",
        ["step 1", "exactly one of"],
    ),
    (
        "table: {rules: ny, decks: 5}\nsteps:\n  - press: SHUFFLED\n",
        ["line 1", "table", "decks: 5 decks not allowed by rules 'ny' (6..8)"],
    ),
    (
        "table: {rules: ny, positions: 8}\nsteps:\n  - press: SHUFFLED\n",
        ["table", "positions: 8 above the 7"],
    ),
    (
        "steps:\n  - press: JUMP\n",
        ["step 1 (press)", "press", "unknown console action 'JUMP'"],
    ),
    (
        "steps:\n  - press: CONFIRM\n    expect: MAYBE\n",
        ["line 3", "step 1 (press)", "expect", "'ACK' or 'NAK <REASON>'"],
    ),
    (
        "shoe: [9C, 1X]\nsteps:\n  - draw: 1\n",
        ["shoe", "card 2: not a card: '1X'"],
    ),
    (
        "steps:\n  - draw: [9C]\n",
        ["step 1 (draw): listing cards needs a 'shoe' list"],
    ),
    (
        "steps:\n  - expect_round: {positions: {1: {initial: {result: won}}}}\n",
        ["step 1 (expect_round)", "expect_round.positions.1.initial.result", "'win'"],
    ),
    (
        "steps:\n  - expect_alert: {code: NO_SUCH_CODE}\n",
        ["step 1 (expect_alert)", "expect_alert.code", "PAST_POSTING"],
    ),
    (
        "steps:\n  - bet: {position: 1, initial: 100\n",
        ["not valid YAML", "line 3"],
    ),
    ("- just a list\n", ["a scenario is a mapping"]),
    (
        "steps:\n  - bet: {position: 1, tie: 100, war_tie: 100}\n",
        ["step 1 (bet)", "tie and war_tie are chips on the same spot"],
    ),
    (
        "shoe: [9C]\nshoe_file: shoe.txt\nsteps:\n  - draw: 1\n",
        ["line 2: shoe_file: give the shoe as a list or as a file, not both"],
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), MALFORMED, ids=[f"malformed-{i}" for i in range(len(MALFORMED))]
)
def test_malformed_scenario_error_names_the_field(text: str, expected: list[str]) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, name="bad", path=Path("bad.yaml"))
    message = str(info.value)
    assert message.startswith("bad.yaml: ")
    assert [part for part in expected if part not in message] == [], message


def test_check_command_reports_a_bad_file_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(MALFORMED[0][0], encoding="utf-8")
    good = tmp_path / "good.yaml"
    good.write_text("steps:\n  - press: SHUFFLED\n    expect: ACK\n", encoding="utf-8")
    assert main(["scenario", "check", str(good)]) == 0
    assert main(["scenario", "check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: line 3: step 2 (bet): bet.position" in err


def _parses_or_explains(text: str) -> None:
    """A scenario, or a ScenarioError naming the scenario; never any other exception."""
    problem: ScenarioError | None = None
    try:
        parse_scenario(text, name="fuzz")
    except ScenarioError as exc:
        problem = exc
    assert problem is None or str(problem).startswith("fuzz: ")


_scalars = st.none() | st.booleans() | st.integers(-5, 20) | st.text(max_size=8)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_step_keys = st.sampled_from(["bet", "press", "draw", "expect_round", "expect_alert", "x"])


@settings(max_examples=150)
@given(
    steps=st.lists(st.dictionaries(_step_keys, _values, max_size=2), max_size=4),
    shoe=_values,
    table=_values,
)
def test_any_structure_is_a_scenario_or_a_scenario_error(
    steps: list[dict[str, object]], shoe: object, table: object
) -> None:
    """Garbage in any field never escapes as anything but a ScenarioError."""
    import yaml

    text = yaml.safe_dump({"table": table, "shoe": shoe, "steps": steps})
    _parses_or_explains(text)


@settings(max_examples=150)
@given(st.text(max_size=200))
def test_any_text_is_a_scenario_or_a_scenario_error(text: str) -> None:
    _parses_or_explains(text)


PASSING = """\
table: {rules: ny}
shoe: [9C, 8H, 4S]
steps:
  - press: SHUFFLED
    expect: ACK
  - bet: {position: 1, initial: 1000}
  - press: NO_MORE_BETS
    expect: ACK
  - draw: 3
  - expect_round: {positions: {1: {initial: {result: win, net: 1000}}}}
"""


def test_junit_report_is_valid(
    tmp_path: Path, mosquitto: MosquittoBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    passing = tmp_path / "passing.yaml"
    passing.write_text(PASSING, encoding="utf-8")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(WRONG, encoding="utf-8")
    out = tmp_path / "report.xml"
    argv = ["scenario", "run", str(passing), str(wrong), "--broker", mosquitto.url]
    assert main([*argv, "--junit", str(out)]) == 1
    stdout = capsys.readouterr().out
    assert f"PASS  passing ({passing})" in stdout
    assert f"FAIL  wrong ({wrong})" in stdout
    assert "1 of 2 scenarios passed" in stdout

    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["passing", "wrong"]
    for suite in suites:
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases) > 0
        assert int(suite.get("failures", "-1")) == sum(
            1 for c in cases if c.find("failure") is not None
        )
        assert int(suite.get("errors", "-1")) == sum(
            1 for c in cases if c.find("error") is not None
        )
        assert float(suite.get("time", "-1")) >= 0
        assert suite.get("timestamp")
        for case in cases:
            assert case.get("name")
            assert case.get("classname") == f"scenarios.{suite.get('name')}"
            assert float(case.get("time", "-1")) >= 0
            for problem in [*case.findall("failure"), *case.findall("error")]:
                assert problem.get("message")
                assert problem.text == problem.get("message")
    totals = {k: sum(int(s.get(k, "0")) for s in suites) for k in ("tests", "failures", "errors")}
    assert totals == {k: int(root.get(k, "-1")) for k in totals}
    assert totals["failures"] + totals["errors"] == 4  # steps 1, 5, 6 and 8 of WRONG
    passing_cases = suites[0].findall("testcase")
    assert len(passing_cases) == 3
    assert all(c.find("failure") is None and c.find("error") is None for c in passing_cases)


def test_a_shoe_file_is_found_next_to_its_scenario_wherever_it_runs_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bench"
    (folder / "shoes").mkdir(parents=True)
    (folder / "shoes" / "short.txt").write_text("# burn, P1, dealer\n9C\n8H 4S\n", encoding="utf-8")
    scenario = folder / "short.yaml"
    scenario.write_text(
        "shoe_file: shoes/short.txt\nsteps:\n  - draw: [9C, 8H]\n", encoding="utf-8"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    loaded = load_scenario(Path("..") / "bench" / "short.yaml")
    assert loaded.scenario.shoe == ("9C", "8H", "4S")
    (folder / "shoes" / "short.txt").write_text("9C 1X\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario)
    assert "line 1: shoe_file" in str(info.value)
    assert "short.txt: card 2: not a card: '1X'" in str(info.value)
    scenario.write_text("shoe_file: shoes/none.txt\nsteps:\n  - draw: 1\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"shoe_file: cannot read .*none\.txt"):
        load_scenario(scenario)


TIE_SPOT = """\
table: {rules: ny}
shoe: [9C, 7H, 7S, 2C, 3C, 4C, KH, 5D]
steps:
  - press: SHUFFLED
  - bet: {position: 1, initial: 1000, tie: 500}
  - press: NO_MORE_BETS
  - draw: [9C, 7H, 7S]
  - expect_phase: tie_decision
  - bet: {position: 1, initial: 1000, STEP}
"""


@pytest.mark.parametrize(
    ("step", "verdict"),
    [
        # Chips left on the tie spot at the decision would be a war-tie wager (§(i)(5)):
        # the file must say so.
        ("tie: 500, war: 1000", "P1 is deciding a tie: chips on its tie spot now are"),
        ("war_tie: 500, war: 1000", None),
    ],
    ids=["tie-at-the-decision-refused", "war_tie-at-the-decision"],
)
async def test_chips_on_the_tie_spot_at_a_decision_are_written_war_tie(
    step: str, verdict: str | None, mosquitto: MosquittoBroker
) -> None:
    text = TIE_SPOT.replace("STEP", step) + (
        "  - press: WAR 1\n  - draw: [2C, 3C, 4C, KH, 5D]\n"
        "  - expect_round: {positions: {1: {war_tie: {amount: 500, result: lose}}}}\n"
    )
    result = await run_scenario(parse_scenario(text, name="tie-spot"), broker_url=mosquitto.url)
    if verdict is None:
        assert result.passed, format_result(result, verbose=True)
    else:
        [failed] = result.failures
        assert failed.number == 6
        assert failed.detail.startswith(verdict), failed.detail
        assert "write war_tie: 500" in failed.detail


async def test_war_tie_chips_outside_a_decision_are_refused(mosquitto: MosquittoBroker) -> None:
    text = "table: {rules: ny}\nsteps:\n  - press: SHUFFLED\n  - bet: {position: 1, war_tie: 500}\n"
    result = await run_scenario(parse_scenario(text, name="war-tie"), broker_url=mosquitto.url)
    [failed] = result.failures
    assert "P1 is not (phase shuffle_due): write tie" in failed.detail
