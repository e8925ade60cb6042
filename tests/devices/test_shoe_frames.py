"""The shoe's frames: every type round-trips; anything off the table is refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.errors import FrameError
from drivers.lineframe.cards import DECK
from drivers.lineframe.codec import LineDecoder, encode_body
from drivers.shoe import frames as f

tokens = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="$*,"),
    min_size=1,
    max_size=20,
)
reads = st.integers(min_value=1, max_value=10**9)
last_reads = st.integers(min_value=0, max_value=10**9)

reports = st.one_of(
    st.builds(f.HelloFrame, tokens, tokens, last_reads),
    st.builds(f.CardFrame, reads, st.sampled_from(DECK)),
    st.builds(f.MisreadFrame, reads),
    st.builds(f.CoverFrame, reads),
    st.builds(f.StatusFrame, last_reads, st.sampled_from(f.ShoeCondition)),
)
commands = st.one_of(st.builds(f.ResendFrame, reads), st.just(f.InfoFrame()))


@settings(max_examples=300)
@given(reports)
def test_every_report_round_trips(frame: f.ShoeReport) -> None:
    assert f.parse_report(frame.body()) == frame
    assert LineDecoder(f.parse_report).feed(frame.encode()) == [frame]


@settings(max_examples=100)
@given(commands)
def test_every_command_round_trips(frame: f.ShoeCommand) -> None:
    assert LineDecoder(f.parse_command).feed(frame.encode()) == [frame]


def test_info_is_the_bare_word() -> None:
    assert f.InfoFrame().encode() == encode_body("INFO")


@pytest.mark.parametrize(
    "body",
    [
        "HELLO,S,1.0",
        "HELLO,S,1.0,-1",
        "HELLO,,1.0,0",
        "CARD,1,AS,extra",
        "CARD,+1,AS",
        "CARD, 1,AS",
        "CARD,1,1S",
        "MISREAD,0",
        "MISREAD,x",
        "COVER",
        "STATUS,3",
        "STATUS,3,ok",
        "STATUS,3,OK,1",
        "INFO",
        "RESEND,2",
        "card,1,AS",
    ],
)
def test_reports_off_the_table_are_refused(body: str) -> None:
    with pytest.raises(FrameError):
        f.parse_report(body)


@pytest.mark.parametrize("body", ["RESEND", "RESEND,0", "RESEND,1,2", "INFO,1", "CARD,1,AS"])
def test_commands_off_the_table_are_refused(body: str) -> None:
    with pytest.raises(FrameError):
        f.parse_command(body)
