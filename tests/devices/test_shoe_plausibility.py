"""docs/devices.md, frame plausibility: what two flips of one bit could have made of a shoe's
frame, which the XOR checksum cannot see, is dropped and counts for nothing."""

from __future__ import annotations

from drivers.lineframe.codec import LineDecoder
from drivers.lineframe.session import Step
from drivers.shoe.frames import (
    CardFrame,
    HelloFrame,
    ResendFrame,
    ShoeCondition,
    StatusFrame,
    parse_report,
)
from drivers.shoe.protocol import CardDrawn, ReadsLost
from tests.devices.test_shoe_protocol import AS, KH, OK, card, connected, feed


def test_a_heartbeat_whose_count_went_back_is_corrupt_and_counts_for_nothing() -> None:
    # docs/devices.md, frame plausibility: only a HELLO announces a reboot.
    p = connected()
    feed(p, StatusFrame(0, OK), now=0.5)
    feed(p, card(1), card(2), card(3))
    deadline = p.deadline()
    step = p.frame_received(StatusFrame(1, ShoeCondition.JAM), 2.0)
    assert step == Step()
    assert p.corrupt == 1
    assert p.deadline() == deadline  # not taken as a heartbeat
    assert p.timer(3.5).lost == "heartbeat_timeout"


def test_a_bit_flipped_heartbeat_far_ahead_is_corrupt_and_loses_no_read() -> None:
    # $STATUS,10,OK arrived as $STATUS,98,OK (two flips of bit 3): believed, it made the
    # reads 11-98 lost, the real read 11 a duplicate, and every real STATUS after it corrupt.
    sent_bytes = StatusFrame(10, OK).encode()
    (arrived,) = LineDecoder(parse_report).feed(sent_bytes.replace(b"10", b"98"))
    assert arrived == StatusFrame(98, OK)
    p = connected()
    for n in range(1, 11):
        feed(p, card(n))
    feed(p, StatusFrame(10, OK))
    deadline = p.deadline()
    assert feed(p, arrived, now=0.5) == ([], [])
    assert p.corrupt == 1
    assert p.deadline() == deadline  # not a heartbeat either
    events, sent = feed(p, card(11, KH), StatusFrame(11, OK), now=1.0)
    assert (events, sent) == ([CardDrawn(11, KH)], [])
    assert p.corrupt == 1


def test_a_bit_flipped_read_number_is_dropped_not_taken_as_a_read() -> None:
    # Issue 10, case 9: $CARD,10,AS arrived as $CARD,98,AS (two flips of bit 3).
    sent_bytes = CardFrame(10, AS).encode()
    flipped = sent_bytes.replace(b"10", b"98")
    assert [a ^ b for a, b in zip(sent_bytes, flipped, strict=True) if a != b] == [8, 8]
    (arrived,) = LineDecoder(parse_report).feed(flipped)  # the checksum cannot see it
    assert arrived == CardFrame(98, AS)
    p = connected()
    for n in range(1, 10):
        feed(p, card(n))
    feed(p, StatusFrame(9, OK))
    events, sent = feed(p, arrived)
    assert (events, sent) == ([], [])
    assert p.corrupt == 1
    assert p.taken == 9
    assert p.held == 0
    assert p.deadline() == 3.0  # the heartbeat watchdog only: no resend is due
    # Read 10 was what it carried: the next read shows it missing, and RESEND fills it.
    events, sent = feed(p, card(11, KH))
    assert (events, sent) == ([], [ResendFrame(10)])
    events, _ = feed(p, card(10, AS), card(11, KH))
    assert events == [CardDrawn(10, AS), CardDrawn(11, KH)]
    # The next HELLO agrees with the count: it is no reboot.
    events, sent = feed(p, HelloFrame("S", "1", 11))
    assert not any(isinstance(e, ReadsLost) for e in events)
    assert sent == []
