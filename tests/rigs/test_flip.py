"""The rig's line faults do what the scenario steps say: one flipped bit is caught by
the checksum, the same bit flipped twice is not (docs/devices.md, line framing)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from drivers.lineframe.cards import Card
from drivers.lineframe.codec import LineDecoder
from drivers.shoe.frames import CardFrame, parse_report
from table_controller.rigs.scenario.table import flip_bit, flip_twice

RANKS = "23456789TJQKA"
SUITS = "CDHS"
cards = st.builds(lambda r, s: Card.parse(r + s), st.sampled_from(RANKS), st.sampled_from(SUITS))


@given(st.integers(min_value=1, max_value=10**6), cards)
def test_one_flipped_bit_is_dropped_as_corrupt(n: int, card: Card) -> None:
    decoder = LineDecoder(parse_report)
    assert decoder.feed(flip_bit(CardFrame(n, card).encode())) == []
    assert decoder.feed(CardFrame(n, card).encode()) == [CardFrame(n, card)]


# Digits whose bit 3 flipped is a digit again ('1' <-> '9', '0' <-> '8'), as in
# ``$CARD,10,AS`` read as ``$CARD,98,AS``.
read_numbers = st.builds(
    lambda a, b, rest: int(a + b + rest),
    st.sampled_from("19"),  # not 8: its flip, 0, would lead the number
    st.sampled_from("0189"),
    st.text("0123456789", max_size=4),
)


@given(read_numbers, cards)
def test_the_same_bit_flipped_twice_passes_the_checksum(n: int, card: Card) -> None:
    [frame] = LineDecoder(parse_report).feed(flip_twice(CardFrame(n, card).encode()))
    # A frame the checksum cannot tell from a real one, with another read number.
    assert isinstance(frame, CardFrame)
    assert frame.card == card
    assert frame.n != n
