"""``table-controller demo``: a whole table played by a simulated dealer and players.

The headless runs are checked against what they print per round (the published
round records): the summary's figures must be the sums of those lines. Bad options
and a broker that is not there are told plainly.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller import cli
from table_controller.rigs.demo import money
from tests.demo_rig import BROKER, add_up, cents, parse_summary

MQTT_311_WARNING = "MQTT 3.1.1 (mqtt.protocol): the broker cannot report refused publishes"


@given(st.integers(min_value=-(10**9), max_value=10**9))
@settings(max_examples=200)
def test_amounts_print_and_read_back(value: int) -> None:
    assert cents(money(value)) == value


# ---------------------------------------------------------------- headless runs


@pytest.mark.parametrize(
    ("broker_impl", "rules", "seed"),
    [("mosquitto", "ny", 10), ("amqtt", "uk", 11)],
    # Seeds chosen so that five rounds hold both a war and a surrender.
    ids=["mosquitto-ny-seed10", "amqtt-uk-seed11"],
)
def test_headless_summary_is_what_the_round_records_say(
    broker_impl: str,
    rules: str,
    seed: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    summary_file = tmp_path / "summary.json"
    rc = cli.main(
        [
            "demo",
            "--rounds",
            "5",
            "--headless",
            "--speed",
            "50",
            "--seed",
            str(seed),
            "--rules",
            rules,
            "--broker-impl",
            broker_impl,
            "--misreads",
            "0.3",
            "--past-posts",
            "1",
            "--json-summary",
            str(summary_file),
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = out.splitlines()
    # The broker's address comes first, headless too, so the feed can be watched.
    broker_line, *round_lines, summary = lines
    assert BROKER.match(broker_line), broker_line
    totals = add_up(round_lines)
    assert totals.round_ids == [1, 2, 3, 4, 5]
    assert totals.wars >= 1, "the seed no longer plays a war"
    assert totals.surrenders >= 1, "the seed no longer plays a surrender"
    # Tie wagers are on the round lines: a won hand with a lost tie wager reads right.
    assert totals.tie_wagers >= 1, "the seed no longer plays a tie wager"

    printed = parse_summary(summary)
    expected = {
        "stopped": False,
        "rounds": 5,
        "ties": totals.ties,
        "wars": totals.wars,
        "surrenders": totals.surrenders,
        "voids": 0,
        "alerts": sum(totals.alerts.values()),
        "codes": totals.alerts,
        "net": totals.net,
    }
    assert printed == expected

    written = json.loads(summary_file.read_text())
    assert written["interrupted"] is False
    assert written["problems"] == []
    assert (
        written["rounds"],
        written["ties"],
        written["wars"],
        written["surrenders"],
        written["alerts"],
        Counter(written["alerts_by_code"]),
        written["players_net"],
    ) == (
        5,
        totals.ties,
        totals.wars,
        totals.surrenders,
        sum(totals.alerts.values()),
        totals.alerts,
        totals.net,
    )
    # Every alert of the run was a mistake the players or the shoe made, and was recorded:
    # a past-post each round (--past-posts 1) and the misreads the dealer keyed in.
    assert Counter(written["caused_by_code"]) == totals.alerts
    assert totals.alerts["PAST_POSTING"] == 5
    assert totals.alerts["MISREAD"] >= 1
    # docs/feed.md: the table on a 3.1.1 broker says it cannot see refusals.
    assert (MQTT_311_WARNING in err) == (broker_impl == "amqtt")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "rc", "says"),
    [
        (["--broker", "mqtt://127.0.0.1:1", "--broker-impl", "amqtt"], 2, "--broker-impl"),
        (["--broker", "http://127.0.0.1:1"], 2, "expected mqtt://"),
        (["--protocol", "3.1.1"], 2, "--protocol is for --broker"),
        (["--headless", "--broker", "mqtt://127.0.0.1:{refused}"], 1, "cannot connect"),
    ],
    ids=["impl-with-broker", "bad-url", "protocol-without-broker", "no-broker-there"],
)
def test_bad_options_and_a_missing_broker_are_told_plainly(
    args: list[str], rc: int, says: str, capsys: pytest.CaptureFixture[str], refused_port: int
) -> None:
    # The port is taken when the test runs, and held: chosen at collection, it could be
    # another test's broker by then.
    args = [a.format(refused=refused_port) for a in args]
    assert cli.main(["demo", *args]) == rc
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err
