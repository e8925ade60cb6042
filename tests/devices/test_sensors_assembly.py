"""The sensor board's snapshot assembly: one snapshot per change from its VALUES and
SPOTS reports, heartbeats ignored, values never taken from another change; pure, no
I/O."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.sensors.frames import SPOT_BITS, Spot, SpotsReport, ValuesReport
from drivers.sensors.protocol import SnapshotAssembler, SpotsSnapshot
from tests.devices.sensors_rig import masks, seqs

# -------------------------------------------------------------- snapshot assembly

layout_states = st.lists(
    st.tuples(
        st.dictionaries(st.integers(0, SPOT_BITS - 1), st.integers(1, 10**6), max_size=SPOT_BITS),
        masks,
        st.integers(0, 3),
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200)
@given(states=layout_states, rfid=st.booleans(), first_seq=seqs)
def test_assembler_emits_each_change_once_and_ignores_heartbeats(
    states: list[tuple[dict[int, int], int, int, bool]], rfid: bool, first_seq: int
) -> None:
    """A board's stream — VALUES, SPOTS, heartbeats per change — gives one snapshot per change;
    a change whose VALUES went missing shows every value unknown (docs/devices.md)."""
    assembler = SnapshotAssembler()
    expected: list[tuple[int, int, tuple[tuple[int, int], ...] | None]] = []
    got: list[tuple[int, int, tuple[tuple[int, int], ...] | None]] = []
    seq = first_seq
    for chips, fault, heartbeats, values_lost in states:
        seq = (seq + 1) % 256
        with_values = rfid and not values_lost
        present = 0
        for bit in chips:
            present |= 1 << bit
        stream: list[SpotsReport | ValuesReport] = []
        if with_values:
            items = sorted(chips.items())
            stream += [
                ValuesReport(seq, tuple(items[i : i + 12])) for i in range(0, len(items), 12)
            ]
            if not items:
                stream.append(ValuesReport(seq, ()))
        stream += [SpotsReport(seq, present, fault)] * (1 + heartbeats)
        key = (present, fault, tuple(sorted(chips.items())) if with_values else None)
        if not expected or expected[-1] != key:
            expected.append(key)
        for report in stream:
            snapshot = assembler.feed(report)
            if snapshot is not None:
                assert snapshot.seq == seq
                got.append((snapshot.present, snapshot.fault, snapshot.values))
    assert got == expected


def test_values_wait_for_the_spots_report_of_their_seq() -> None:
    assembler = SnapshotAssembler()
    first = assembler.feed(SpotsReport(4, 0b1, 0))
    assert first == SpotsSnapshot(4, 0b1, 0, None)
    # VALUES of change 5 alone change nothing; a heartbeat of change 4 neither.
    assert assembler.feed(ValuesReport(5, ((0, 500), (3, 100)))) is None
    assert assembler.feed(SpotsReport(4, 0b1, 0)) is None
    snapshot = assembler.feed(SpotsReport(5, 0b1001, 0))
    assert snapshot == SpotsSnapshot(5, 0b1001, 0, ((0, 500), (3, 100)))
    # docs/devices.md: a later change without VALUES of its seq leaves every value unknown.
    assert assembler.feed(SpotsReport(6, 0b1000, 0)) == SpotsSnapshot(6, 0b1000, 0, None)


def test_a_change_without_values_never_shows_the_values_of_an_earlier_change() -> None:
    # Issue 10, case 1: $500 latched; one snapshot with no values; then $5 on that spot.
    assembler = SnapshotAssembler()
    assembler.feed(ValuesReport(5, ((0, 50_000),)))
    latched = assembler.feed(SpotsReport(5, 0b1, 0))
    assert latched == SpotsSnapshot(5, 0b1, 0, ((0, 50_000),))
    unknown = assembler.feed(SpotsReport(6, 0b1, 0))
    assert unknown == SpotsSnapshot(6, 0b1, 0, None)  # not $500: the chips may be others now
    assert assembler.feed(SpotsReport(6, 0b1, 0)) is None  # its heartbeat changes nothing
    assembler.feed(ValuesReport(7, ((0, 500),)))
    assert assembler.feed(SpotsReport(7, 0b1, 0)) == SpotsSnapshot(7, 0b1, 0, ((0, 500),))
    assert assembler.feed(SpotsReport(7, 0b1, 0)) is None  # the values hold for their seq


def test_values_of_one_change_do_not_come_back_when_its_seq_number_does() -> None:
    assembler = SnapshotAssembler()
    assembler.feed(ValuesReport(9, ((0, 100),)))
    assembler.feed(SpotsReport(9, 0b1, 0))
    assembler.feed(SpotsReport(10, 0b1, 0))
    # 256 changes later seq 9 is used again; without VALUES its values are unknown.
    again = assembler.feed(SpotsReport(9, 0b11, 0))
    assert again == SpotsSnapshot(9, 0b11, 0, None)


def test_a_values_set_interrupted_by_another_seq_is_dropped() -> None:
    assembler = SnapshotAssembler()
    assembler.feed(ValuesReport(7, ((0, 100),)))
    assembler.feed(ValuesReport(8, ((1, 200),)))
    snapshot = assembler.feed(SpotsReport(8, 0b11, 0))
    assert snapshot is not None
    assert snapshot.values == ((1, 200),)


def test_reset_forgets_values_and_emits_the_next_snapshot_again() -> None:
    assembler = SnapshotAssembler()
    assembler.feed(ValuesReport(1, ((0, 100),)))
    before = assembler.feed(SpotsReport(1, 0b1, 0))
    assert before is not None
    assert before.values == ((0, 100),)
    assert before.cents(1, Spot.INITIAL) == 100
    assert before.holds_chips(1, Spot.INITIAL)
    assert not before.is_faulty(1, Spot.INITIAL)
    assembler.reset()
    again = assembler.feed(SpotsReport(1, 0b1, 0))
    assert again == SpotsSnapshot(1, 0b1, 0, None)
    assert again.cents(1, Spot.INITIAL) is None
