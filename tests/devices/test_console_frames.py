"""The console's frames: every type round-trips; presses keep their argument as sent."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.console import frames as f
from drivers.errors import FrameError
from drivers.lineframe.cards import Card
from drivers.lineframe.codec import LineDecoder, checksum

tokens = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="$*,"),
    min_size=1,
    max_size=12,
)
ks = st.integers(min_value=1, max_value=10**9)
reasons = st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True)


@st.composite
def presses(draw: st.DrawFn) -> f.ButtonFrame:
    action = draw(st.sampled_from(f.ConsoleAction))
    arg = draw(tokens) if action.takes_arg else None
    return f.ButtonFrame(draw(ks), action, arg)


reports = st.one_of(presses(), st.builds(f.ConsoleStatusFrame, st.integers(0, 10**9)))
commands = st.one_of(
    st.builds(f.AckFrame, ks),
    st.builds(f.NakFrame, ks, reasons),
    st.builds(
        f.ShowFrame,
        st.text(
            alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="$*"),
            max_size=f.SHOW_MAX_CHARS,
        ),
    ),
)


@settings(max_examples=300)
@given(reports)
def test_every_report_round_trips(frame: f.ConsoleReport) -> None:
    assert LineDecoder(f.parse_report).feed(frame.encode()) == [frame]


@settings(max_examples=300)
@given(commands)
def test_every_command_round_trips(frame: f.ConsoleCommand) -> None:
    assert LineDecoder(f.parse_command).feed(frame.encode()) == [frame]


def test_press_arguments_are_kept_for_the_game_to_judge() -> None:
    war = f.parse_report("BTN,7,WAR,2")
    assert isinstance(war, f.ButtonFrame)
    assert war.position == 2
    assert f.parse_report("BTN,7,WAR,X") == f.ButtonFrame(7, f.ConsoleAction.WAR, "X")
    card = f.parse_report("BTN,8,CARD,JH")
    assert isinstance(card, f.ButtonFrame)
    assert card.card == Card.parse("JH")
    bad = f.parse_report("BTN,9,CARD,ZZ")
    assert isinstance(bad, f.ButtonFrame)
    assert bad.card is None  # the game answers NAK,9,BAD_CARD
    assert f.parse_report("BTN,1,DEALER,D-114") == f.ButtonFrame(1, f.ConsoleAction.DEALER, "D-114")


def test_show_text_may_hold_commas() -> None:
    assert f.parse_command("SHOW,Round 12, position 3") == f.ShowFrame("Round 12, position 3")


@pytest.mark.parametrize(
    ("body", "action", "arg"),
    [
        ("BTN,1,WAR", f.ConsoleAction.WAR, None),
        ("BTN,1,CONFIRM,2", f.ConsoleAction.CONFIRM, "2"),
        ("BTN,1,DANCE", "DANCE", None),
    ],
)
def test_an_ill_formed_press_is_still_a_press_to_be_refused(
    body: str, action: f.ConsoleAction | str, arg: str | None
) -> None:
    """docs/devices.md: every press gets exactly one ACK or NAK, so a press with an unknown
    action or a missing or extra argument reaches the game, which refuses it."""
    frame = f.parse_report(body)
    assert frame == f.ButtonFrame(1, action, arg)
    assert isinstance(frame, f.ButtonFrame)
    assert not frame.well_formed


@pytest.mark.parametrize(
    "body",
    [
        "BTN,0,CONFIRM",
        "BTN,1,WAR,2,3",
        "BTN,1,WAR,",
        "STATUS",
        "STATUS,-1",
        "ACK,1",
    ],
)
def test_reports_off_the_table_are_refused(body: str) -> None:
    with pytest.raises(FrameError):
        f.parse_report(body)


@pytest.mark.parametrize(
    "body", ["ACK", "ACK,0", "NAK,1", "NAK,1,not_now", "SHOW", "BTN,1,CONFIRM"]
)
def test_commands_off_the_table_are_refused(body: str) -> None:
    with pytest.raises(FrameError):
        f.parse_command(body)


def test_show_text_is_fitted_to_one_frame() -> None:
    fitted = f.fit_show_text("Café $5 * " + "x" * 200)
    assert fitted.startswith("Caf? ?5 ? ")
    assert len(fitted) == f.SHOW_MAX_CHARS
    assert f.ShowFrame(fitted).encode()  # encodes without complaint


def test_skip_names_the_position_left_out() -> None:
    # §(h)(3)(iii): docs/devices.md's SKIP,<pos> action.
    (frame,) = LineDecoder(f.parse_report).feed(
        b"$BTN,4,SKIP,3*%02X\r\n" % checksum(b"BTN,4,SKIP,3")
    )
    assert frame == f.ButtonFrame(4, f.ConsoleAction.SKIP, "3")
    assert isinstance(frame, f.ButtonFrame)
    assert frame.well_formed
    assert frame.position == 3
    assert not f.ButtonFrame(5, f.ConsoleAction.SKIP).well_formed  # SKIP needs a position
    assert f.parse_report("BTN,6,SKIP,X") == f.ButtonFrame(6, f.ConsoleAction.SKIP, "X")
    assert f.press_position(f.ConsoleAction.SKIP, "X") is None  # BAD_POSITION, the game's call


@pytest.mark.parametrize(
    "reason",
    ["NOT_NOW", "NO_WAR_WAGER", "BAD_POSITION", "BAD_CARD", "DEVICE_OFFLINE", "JOURNAL_FAULT"],
)
def test_every_refusal_devices_md_names_is_a_code_and_a_frame(reason: str) -> None:
    code = f.NakReason(reason)
    (frame,) = LineDecoder(f.parse_command).feed(f.NakFrame(3, code).encode())
    assert frame == f.NakFrame(3, reason)
    assert frame.body() == f"NAK,3,{reason}"
