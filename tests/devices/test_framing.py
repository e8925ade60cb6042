"""The ``$BODY*CS\\r\\n`` codec: docs/devices.md's examples, round trips, chunking, noise."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from drivers.console import frames as console_frames
from drivers.errors import FrameError
from drivers.lineframe.cards import DECK, Card, Rank, Suit
from drivers.lineframe.codec import (
    MAX_FRAME_BYTES,
    LineDecoder,
    LineFrame,
    encode_body,
    frame_parser,
)
from drivers.shoe import frames as shoe_frames

# Every frame of docs/devices.md "Examples", with the frame it means, each typed by hand.
SHOE_REPORT_VECTORS = [
    (b"$HELLO,SHOE-0001,1.4.2,0*54\r\n", shoe_frames.HelloFrame("SHOE-0001", "1.4.2", 0)),
    (b"$CARD,1,AS*37\r\n", shoe_frames.CardFrame(1, Card(Rank.ACE, Suit.SPADES))),
    (b"$CARD,2,TD*36\r\n", shoe_frames.CardFrame(2, Card(Rank.TEN, Suit.DIAMONDS))),
    (b"$MISREAD,3*5A\r\n", shoe_frames.MisreadFrame(3)),
    (b"$COVER,250*56\r\n", shoe_frames.CoverFrame(250)),
    (b"$STATUS,3,OK*23\r\n", shoe_frames.StatusFrame(3, shoe_frames.ShoeCondition.OK)),
]
SHOE_COMMAND_VECTORS = [
    (b"$RESEND,2*15\r\n", shoe_frames.ResendFrame(2)),
]
CONSOLE_REPORT_VECTORS = [
    (b"$BTN,7,WAR,2*35\r\n", console_frames.ButtonFrame(7, console_frames.ConsoleAction.WAR, "2")),
    (
        b"$BTN,8,CARD,JH*5A\r\n",
        console_frames.ButtonFrame(8, console_frames.ConsoleAction.CARD, "JH"),
    ),
    (b"$STATUS,8*00\r\n", console_frames.ConsoleStatusFrame(8)),
]
CONSOLE_COMMAND_VECTORS = [
    (b"$ACK,7*52\r\n", console_frames.AckFrame(7)),
    (b"$NAK,7,NO_WAR_WAGER*70\r\n", console_frames.NakFrame(7, "NO_WAR_WAGER")),
]
ALL_VECTORS = [
    *((raw, frame, shoe_frames.parse_report) for raw, frame in SHOE_REPORT_VECTORS),
    *((raw, frame, shoe_frames.parse_command) for raw, frame in SHOE_COMMAND_VECTORS),
    *((raw, frame, console_frames.parse_report) for raw, frame in CONSOLE_REPORT_VECTORS),
    *((raw, frame, console_frames.parse_command) for raw, frame in CONSOLE_COMMAND_VECTORS),
]


@pytest.mark.parametrize(("raw", "frame", "parse"), ALL_VECTORS, ids=lambda v: repr(v)[:40])
def test_devices_md_examples_decode_and_encode_exactly(
    raw: bytes, frame: LineFrame, parse: Callable[[str], LineFrame]
) -> None:
    decoder = LineDecoder(parse)
    assert decoder.feed(raw) == [frame]
    assert frame.encode() == raw


def test_checksum_is_the_xor_of_the_body() -> None:
    body = b"CARD,1,AS"
    expected = reduce(lambda acc, b: acc ^ b, body, 0)
    assert encode_body("CARD,1,AS") == b"$CARD,1,AS*%02X\r\n" % expected


def test_example_cards_read_as_the_spec_says() -> None:
    assert Card.parse("TD") == Card(Rank.TEN, Suit.DIAMONDS)
    assert str(Card(Rank.TEN, Suit.DIAMONDS)) == "TD"
    assert len(DECK) == 52
    assert len(set(DECK)) == 52
    assert Rank.ACE > Rank.KING > Rank.TWO
    for bad in ("", "A", "1S", "AX", "as", "ASS", "10D"):
        with pytest.raises(ValueError, match="not a card"):
            Card.parse(bad)


def test_bad_checksum_is_dropped_and_counted() -> None:
    decoder = LineDecoder(shoe_frames.parse_report)
    assert decoder.feed(b"$CARD,1,AS*38\r\n$CARD,2,TD*36\r\n") == [
        shoe_frames.CardFrame(2, Card.parse("TD"))
    ]
    assert decoder.stats.bad_checksum == 1
    assert decoder.stats.frames == 1


def test_lower_case_checksum_digits_are_accepted() -> None:
    decoder = LineDecoder(shoe_frames.parse_report)
    assert decoder.feed(b"$MISREAD,3*5a\r\n") == [shoe_frames.MisreadFrame(3)]


def test_unknown_frames_and_bad_fields_are_dropped_and_counted() -> None:
    decoder = LineDecoder(shoe_frames.parse_report)
    lines = [
        encode_body("BOGUS,1"),
        encode_body("CARD,1,ZZ"),
        encode_body("CARD,0,AS"),
        encode_body("CARD,-1,AS"),
        encode_body("CARD,1"),
        encode_body("STATUS,1,ASLEEP"),
        encode_body("RESEND,1"),  # a command, not something a shoe sends
        encode_body(""),
    ]
    assert decoder.feed(b"".join(lines)) == []
    assert decoder.stats.unknown == len(lines)


def test_over_long_frames_are_dropped_and_the_next_frame_is_kept() -> None:
    decoder = LineDecoder(console_frames.parse_command)
    too_long = b"$SHOW," + b"x" * MAX_FRAME_BYTES + b"*00\r\n"
    good = console_frames.AckFrame(3).encode()
    assert decoder.feed(too_long + good) == [console_frames.AckFrame(3)]
    assert decoder.stats.overlong == 1
    assert decoder.buffered == 0


def test_the_longest_frame_fits_and_one_more_byte_does_not() -> None:
    text = "x" * console_frames.SHOW_MAX_CHARS
    frame = console_frames.ShowFrame(text).encode()
    assert len(frame) == MAX_FRAME_BYTES
    decoder = LineDecoder(console_frames.parse_command)
    assert decoder.feed(frame) == [console_frames.ShowFrame(text)]
    with pytest.raises(ValueError, match="at most"):
        console_frames.ShowFrame(text + "x").encode()


def test_encoder_refuses_bodies_no_receiver_would_accept() -> None:
    for body in ("A$B", "A*B", "tab\there", "é", "line\r\n"):
        with pytest.raises(ValueError, match="printable ASCII"):
            encode_body(body)


def test_a_dollar_inside_noise_does_not_swallow_the_frame_after_it() -> None:
    decoder = LineDecoder(shoe_frames.parse_report)
    frames = decoder.feed(b"$CA\x00RD,1$junk$CARD,1,AS*37\r\n")
    assert frames == [shoe_frames.CardFrame(1, Card.parse("AS"))]
    assert decoder.stats.malformed == 2


def test_frame_parser_rejects_a_trailing_empty_field() -> None:
    parse = frame_parser(shoe_frames.InfoFrame)
    assert parse("INFO") == shoe_frames.InfoFrame()
    with pytest.raises(FrameError):
        parse("INFO,")


# -- properties ---------------------------------------------------------------------------

cards = st.sampled_from(DECK)
counts = st.integers(min_value=1, max_value=10**9)
BODY_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="$*")
tokens = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="$*,"),
    min_size=1,
    max_size=12,
)
shoe_reports = st.one_of(
    st.builds(shoe_frames.HelloFrame, tokens, tokens, st.integers(0, 10**9)),
    st.builds(shoe_frames.CardFrame, counts, cards),
    st.builds(shoe_frames.MisreadFrame, counts),
    st.builds(shoe_frames.CoverFrame, counts),
    st.builds(
        shoe_frames.StatusFrame, st.integers(0, 10**9), st.sampled_from(shoe_frames.ShoeCondition)
    ),
)


@settings(max_examples=300)
@given(st.lists(shoe_reports, max_size=20), st.data())
def test_any_chunking_of_a_stream_gives_the_same_frames(
    frames: list[shoe_frames.ShoeReport], data: st.DataObject
) -> None:
    stream = b"".join(f.encode() for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=30)))
    decoder = LineDecoder(shoe_frames.parse_report)
    out: list[shoe_frames.ShoeReport] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out += decoder.feed(stream[start:end])
    assert out == frames
    assert decoder.stats.frames == len(frames)
    assert decoder.stats.dropped == 0
    assert decoder.buffered == 0


@settings(max_examples=300)
@given(
    st.lists(st.tuples(st.binary(max_size=40), shoe_reports), max_size=15), st.binary(max_size=40)
)
def test_every_frame_after_noise_is_recovered(
    pieces: list[tuple[bytes, shoe_frames.ShoeReport]], tail: bytes
) -> None:
    for noise, _ in pieces:
        # Noise that holds a whole valid frame of its own is not noise.
        assume(LineDecoder(shoe_frames.parse_report).feed(noise) == [])
    stream = b"".join(noise + frame.encode() for noise, frame in pieces) + tail
    decoder = LineDecoder(shoe_frames.parse_report)
    got: list[shoe_frames.ShoeReport] = []
    for i in range(0, len(stream), 7):
        got += decoder.feed(stream[i : i + 7])
    assert got[: len(pieces)] == [frame for _, frame in pieces]


@settings(max_examples=500)
@given(st.lists(st.binary(max_size=300), max_size=10))
def test_any_bytes_never_raise_and_the_buffer_stays_capped(chunks: list[bytes]) -> None:
    decoder = LineDecoder(console_frames.parse_report)
    for chunk in chunks:
        decoder.feed(chunk)
        assert decoder.buffered < MAX_FRAME_BYTES
    # Whatever came before, a fresh frame after a line end is read.
    frame = console_frames.ConsoleStatusFrame(4)
    assert decoder.feed(b"\r\n" + frame.encode())[-1:] == [frame]


@settings(max_examples=300)
@given(st.text(alphabet=BODY_CHARS, max_size=85))
def test_any_printable_body_round_trips(body: str) -> None:
    decoder: LineDecoder[str] = LineDecoder(lambda text: text)
    assert decoder.feed(encode_body(body)) == [body]
