"""What the pages compute from the API's values: hands, charts, durations, money."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from table_controller.recorder.web import charts, views

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def _record(round_id: int, ended: datetime, net: int | None) -> dict[str, object]:
    return {
        "round_id": round_id,
        "ended": ended.isoformat().replace("+00:00", "Z"),
        "net": net,
        "dealer_card": "7S",
        "dealer_war_card": None,
        "cards": [
            {"n": 1, "card": "9C", "role": "burn", "position": None, "source": "shoe"},
            {"n": 2, "card": "7H", "role": "position", "position": 1, "source": "manual"},
            {"n": 3, "card": "7S", "role": "dealer", "position": None, "source": "shoe"},
        ],
        "positions": [
            {
                "position": 1,
                "card": "7H",
                "outcome": "tie",
                "decision": "surrender",
                "war_card": None,
                "war_outcome": None,
                "wagers": [
                    {"spot": "initial", "amount": 2500, "result": "surrender", "net": -1250}
                ],
                "net": -1250,
            }
        ],
    }


def test_a_round_row_counts_burns_and_keeps_every_other_card() -> None:
    row = views.round_row(_record(4, T0, -1250))
    assert (row.burns, row.manual_cards, row.dealer_card) == (1, 1, "7S")
    assert [(h.position, h.card, h.decision, h.net) for h in row.hands] == [
        (1, "7H", "surrender", -1250)
    ]
    assert "9C" not in repr(row)  # the burn's rank is not carried to the page at all


def test_rounds_per_hour_and_the_net_over_the_shift() -> None:
    records = [_record(i, T0 + timedelta(minutes=25 * i), 100 * i) for i in range(1, 6)]
    pace = views.rounds_per_hour(records, T0, T0 + timedelta(hours=3))
    assert pace == [("06:00", 2.0), ("07:00", 2.0), ("08:00", 1.0), ("09:00", 0.0)]
    net = views.net_over_time(reversed(records))  # newest first, as the API answers
    assert [v for _, v in net] == [100, 300, 600, 1000, 1500]


def test_how_long_an_alert_is_open_reads_like_a_clock() -> None:
    assert views.open_for(T0, T0 + timedelta(seconds=42)) == "42 s"
    assert views.open_for(T0, T0 + timedelta(minutes=7, seconds=3)) == "7 min"
    assert views.open_for(T0, T0 + timedelta(hours=2, minutes=5)) == "2 h 05 min"
    assert views.open_for(None, T0) == "-"


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_money_reads_back_as_the_same_cents(cents: int) -> None:
    text = views.money(cents)
    assert int(text.replace(",", "").replace(".", "")) == cents


def test_charts_are_svg_with_a_title_and_no_outside_reference() -> None:
    bar = charts.bar_chart("Win <by> table", [("war-01", 1250.0), ("war-02", -300.0)])
    line = charts.line_chart("Net", [(T0, 0.0), (T0 + timedelta(hours=1), 500.0)], str)
    for svg in (bar, line, charts.bar_chart("Empty", [])):
        assert svg.startswith("<svg")
        assert "<title>" in svg
        assert "http" not in svg
    assert "Win &lt;by&gt; table" in bar
    assert bar.count("<rect") == 2
    assert 'class="bar neg"' in bar


def test_a_tile_takes_the_status_state_and_today_s_figures() -> None:
    entry = {
        "site": "main",
        "table": "war-07",
        "status": {"online": True, "devices": {"shoe": {"state": "fault"}}, "outbox": {"depth": 3}},
        "state": {"phase": "dealing", "round_id": 12, "held": True, "dealer": "D-1"},
        "stats": {"rounds_per_hour": 41.5},
        "open_critical": [{"alert": "A1", "code": "MISREAD", "severity": "critical"}],
    }
    tile = views.tile(entry, {"win": 1250, "rounds": 30, "flags": ["HOLD_VARIANCE"]})
    assert tile.devices == (("shoe", "fault"), ("sensors", "unknown"), ("console", "unknown"))
    assert (tile.key, tile.held, tile.outbox_depth, tile.win_today) == (
        "main/war-07",
        True,
        3,
        1250,
    )
    assert [a.code for a in tile.critical] == ["MISREAD"]
    assert tile.flags == ("HOLD_VARIANCE",)
    assert tile.standing_out
    quiet = views.tile({"site": "main", "table": "war-08"}, None)
    assert (quiet.online, quiet.win_today, quiet.flags, quiet.standing_out) == (
        None,
        None,
        (),
        False,
    )
