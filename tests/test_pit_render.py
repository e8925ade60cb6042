"""render(model) as text and styles, with a recording console and no terminal."""

from __future__ import annotations

import io
import json

from rich.console import Console
from rich.style import Style

from table_controller.pit.model import PitModel
from table_controller.pit.render import render
from table_controller.pit.views import BrokerLink
from tests.test_pit_payloads import (
    SITE,
    TABLE,
    alert,
    card_event,
    enc,
    event,
    last_will,
    round_record,
    state,
    stats,
    status,
    topic,
    void_record,
)

WIDTH = 180


def _text(model: PitModel, width: int = WIDTH) -> str:
    console = Console(record=True, width=width, file=_Null())
    console.print(render(model))
    return console.export_text()


def _styles_of(model: PitModel, needle: str) -> list[Style]:
    """The styles of every rendered piece of text that contains ``needle``."""
    console = Console(width=WIDTH, file=_Null(), color_system="truecolor")
    found = []
    for segment in console.render(render(model)):
        if needle in segment.text and segment.style is not None:
            found.append(segment.style)
    return found


class _Null(io.StringIO):
    """A console file that keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)


def _color(style: Style) -> str | None:
    return style.color.name if style.color is not None else None


def _table_line(text: str, table: str = TABLE) -> str:
    """The table's line of the overview (the pit shows one site: the table id alone)."""
    return next(line for line in text.splitlines() if line.split()[:1] == [table])


def test_an_empty_pit_says_what_it_listens_to() -> None:
    text = _text(PitModel(site=SITE))
    assert f"no table seen yet on casino/{SITE}/table/+/#" in text


def test_the_overview_line_of_a_table() -> None:
    model = PitModel(site=SITE)
    model.feed(topic("status"), enc(status(console="offline", depth=4, oldest_age_s=31)))
    model.feed(
        topic("state"), enc(state(phase="tie_decision", round_id=1207, held=True, dealer="D-114"))
    )
    line = _table_line(_text(model))
    expected = ("ONLINE", "console offline", "4 (31s)", "tie_decision HELD", "1207", "D-114")
    for word in expected:
        assert word in line, (word, line)


def test_devices_read_ok_when_all_are() -> None:
    model = PitModel(site=SITE)
    model.feed(topic("status"), enc(status()))
    assert _table_line(_text(model)).split()[1:3] == ["ONLINE", "ok"]
    model.feed(topic("status"), enc(status(shoe="fault", sensors="offline")))
    assert "shoe fault, sensors offline" in _table_line(_text(model))


def test_an_offline_table_is_shown_offline_in_red() -> None:
    model = PitModel(site=SITE)
    model.feed(topic("status", table="war-09"), enc(last_will(table="war-09")))
    assert "OFFLINE" in _table_line(_text(model), "war-09")
    assert any(
        s.bgcolor is not None and s.bgcolor.name == "red" for s in _styles_of(model, "OFFLINE")
    )


def test_open_critical_alerts_are_red_and_resolved_ones_go() -> None:
    model = PitModel(site=SITE)
    model.feed(topic("alerts"), enc(alert("a-1", "PAST_POSTING", message="chips added on P2")))
    model.feed(topic("alerts"), enc(alert("w-1", "LATE_WAGER", "warning", position=5)))
    text = _text(model)
    assert "CRITICAL PAST_POSTING round 1207 P2 initial — chips added on P2" in text
    assert "WARNING LATE_WAGER round 1207 P5" in text
    assert "1 critical alerts open" in text
    assert {_color(s) for s in _styles_of(model, "PAST_POSTING")} == {"red"}
    assert {_color(s) for s in _styles_of(model, "LATE_WAGER")} == {"yellow"}
    model.feed(topic("alerts"), enc(alert("a-1", "PAST_POSTING", resolved_by="CONFIRM")))
    text = _text(model)
    assert "PAST_POSTING" not in text
    assert "critical alerts open" not in text


def test_round_results_with_outcomes_and_nets() -> None:
    model = PitModel(site=SITE)
    war = round_record(1208)
    war["dealer_card"], war["dealer_war_card"] = "9D", "4C"
    war["positions"][0].update(
        card="9H", outcome="tie", decision="war", war_card="KS", war_outcome="win", net=5000
    )
    lost = round_record(1209)
    lost["positions"][0].update(card="2C", outcome="lose", decision=None, net=-1250)
    lost["net"] = -123456
    for record in (round_record(1207), war, lost, void_record(1210, "misdeal")):
        model.feed(topic("rounds"), enc(record))
    lines = _text(model).splitlines()

    def line_of(round_id: str) -> str:
        return next(line for line in lines if f"│ {round_id} " in line)

    assert "7S" in line_of("1207")
    assert "P1 7H tie→surrender +37.50" in line_of("1207")
    assert "9D / war 4C" in line_of("1208")
    assert "P1 9H tie→war KS win +50.00" in line_of("1208")
    assert "P1 2C lose -12.50" in line_of("1209")
    assert "-1,234.56" in line_of("1209")
    assert "VOID (misdeal)" in line_of("1210")
    order = [lines.index(line_of(r)) for r in ("1210", "1209", "1208", "1207")]
    assert order == sorted(order), "newest round first"


def test_no_burn_card_rank_is_shown() -> None:
    # §(h)(1): a burn card's rank is revealed to no one; the record holds it, the pit does not.
    model = PitModel(site=SITE)
    record = round_record(1207)
    record["cards"][0]["card"] = "QD"
    model.feed(topic("rounds"), enc(record))
    model.feed(topic("events"), enc(card_event(1, n=1, card=None, role="burn", position=None)))
    text = _text(model)
    assert "QD" not in text
    assert "last event #1 card burn" in text


def test_stats_gaps_and_bad_message_counts_are_shown() -> None:
    model = PitModel(site=SITE)
    model.feed(topic("stats"), enc(stats(rounds=321)))
    for seq in (1, 2, 6):
        model.feed(topic("events"), enc(event(seq)))
    model.feed(topic("events"), enc(event(6)))  # resent
    model.feed(topic("state"), b"{not json")
    model.feed(topic("weather"), b"{}")
    text = _text(model)
    assert "rounds 321" in text
    assert "rounds/h 58.5" in text
    assert "drop 12,345.00" in text
    assert "alerts: PAST_POSTING 2, LATE_WAGER 1" in text
    assert "3 events missing" in text
    assert "1 duplicates dropped, 1 malformed, 1 unexpected" in text
    assert _table_line(text).split()[-2:] == ["3", "2"]  # gaps, bad


def test_broker_state_is_in_the_header() -> None:
    model = PitModel(site=SITE)
    model.set_connection(BrokerLink.RETRYING, "mqtt://pit:1883", "refused; retry in 2.0s")
    assert "broker mqtt://pit:1883 retrying (refused; retry in 2.0s)" in _text(model)


def test_payload_text_is_shown_as_written_never_as_markup_or_controls() -> None:
    model = PitModel(site=SITE)
    payload = alert("a-1", message="[bold red]fake[/] \x1b[2J wiped")
    model.feed(topic("alerts"), json.dumps(payload).encode())
    console = Console(record=True, width=WIDTH, file=_Null(), force_terminal=True)
    console.print(render(model))
    assert "[bold red]fake[/]" in console.export_text()
    assert "\x1b[2J" not in console.export_text(styles=True)


def test_a_narrow_terminal_still_renders() -> None:
    model = PitModel(site=SITE)
    model.feed(topic("status"), enc(status()))
    model.feed(topic("rounds"), enc(round_record()))
    assert SITE in _text(model, width=40)


def test_many_tables_keep_their_lines_and_the_ones_needing_attention_keep_panels() -> None:
    """A supervisor watching a floor sees every table's line; the panels go to the
    tables with open critical alerts and offline tables first."""
    model = PitModel(site=SITE)
    names = [f"war-{i:02d}" for i in range(1, 21)]
    for name in names:
        model.feed(topic("status", table=name), enc(status(table=name)))
    model.feed(topic("alerts", table="war-20"), enc(alert("a-20", table="war-20")))
    model.feed(topic("status", table="war-19"), enc(last_will(table="war-19")))
    text = _text(model)
    for name in names:
        assert _table_line(text, name)
    panels = {name for name in names if f"{SITE}/{name}" in text}
    assert {"war-20", "war-19"} <= panels
    assert len(panels) == 12
    assert "8 of 20 tables shown by their overview line only" in text


def test_the_detail_names_the_tables_currency() -> None:
    model = PitModel(site=SITE)
    model.feed(topic("status"), enc(status(instance="A")))
    assert "amounts in USD" in _text(model)
    model.feed(topic("status"), enc(status(msg_id="older")))
    assert "amounts in" not in _text(model)


def test_a_journal_that_cannot_commit_shows_beside_the_devices() -> None:
    model = PitModel(site=SITE)
    payload = status(instance="A")
    payload["journal"] = {"state": "fault", "detail": "disk full"}
    model.feed(topic("status"), enc(payload))
    text = _text(model)
    assert "journal fault" in text
    assert "journal fault: disk full" in text
    payload = {**payload, "id": "ok-again", "journal": {"state": "ok", "detail": None}}
    model.feed(topic("status"), enc(payload))
    assert "journal" not in _text(model)
