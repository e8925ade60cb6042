"""The sensor board's codec and simusb wire format: docs/devices.md's vectors, bad
reports and lines, round trips and any bytes at all; pure, no I/O."""

from __future__ import annotations

import contextlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.errors import BadReport
from drivers.sensors.frames import (
    MAX_VALUES_PER_REPORT,
    SPOT_BITS,
    LightsReport,
    Spot,
    SpotsReport,
    ValuesReport,
    bit_spot,
    encode_report,
    parse_in_report,
    parse_out_report,
    spot_bit,
    values_reports,
)
from drivers.sensors.simusb import (
    BadMessage,
    DeviceMessage,
    LineBuffer,
    PacketMessage,
    decode_message,
    encode_message,
)
from tests.devices.sensors_rig import masks, seqs

# ---------------------------------------------------------------- docs/devices.md vectors

SPOTS_VECTOR = bytes.fromhex("01 05 43000000 00000000")
VALUES_VECTOR = bytes.fromhex("02 05 03 00 c4090000 01 f4010000 06 e8030000")
LIGHTS_VECTOR = bytes.fromhex("10 04000000")


def test_spots_vector_position_1_initial_and_tie_position_3_initial() -> None:
    report = parse_in_report(SPOTS_VECTOR)
    assert report == SpotsReport(seq=5, present=0x43, fault=0)
    assert spot_bit(1, Spot.INITIAL) == 0
    assert spot_bit(1, Spot.TIE) == 1
    assert spot_bit(3, Spot.INITIAL) == 6
    assert encode_report(report) == SPOTS_VECTOR


def test_values_vector_25_5_and_10_dollars() -> None:
    report = parse_in_report(VALUES_VECTOR)
    assert report == ValuesReport(seq=5, values=((0, 2500), (1, 500), (6, 1000)))
    assert encode_report(report) == VALUES_VECTOR


def test_lights_vector_position_1_war_spot() -> None:
    assert spot_bit(1, Spot.WAR) == 2
    assert encode_report(LightsReport(1 << 2)) == LIGHTS_VECTOR
    assert parse_out_report(LIGHTS_VECTOR) == LightsReport(0x04)


@pytest.mark.parametrize("vector", [SPOTS_VECTOR, VALUES_VECTOR], ids=["spots", "values"])
def test_zero_padding_to_64_bytes_is_ignored(vector: bytes) -> None:
    padded = vector.ljust(64, b"\x00")
    assert parse_in_report(padded) == parse_in_report(vector)
    assert encode_report(parse_in_report(vector), pad=True) == padded


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty"),
        (SPOTS_VECTOR[:-1], "short SPOTS"),
        (SPOTS_VECTOR + b"\x01", "non-zero after SPOTS"),
        (SPOTS_VECTOR.ljust(65, b"\x00"), "longer than a packet"),
        (bytes.fromhex("01 05 00000040 00000000"), "present bit 30"),
        (bytes.fromhex("01 05 00000000 00000080"), "fault bit 31"),
        (bytes.fromhex("02 05 0d") + bytes(65 - 3), "count 13"),
        (bytes.fromhex("02 05 02 00 c4090000"), "count 2 but one item"),
        (bytes.fromhex("02 05 01 1e c4090000"), "value bit 30"),
        (bytes.fromhex("02 05 02 03 c4090000 03 01000000"), "same bit twice"),
        (bytes.fromhex("02 05"), "VALUES without count"),
        (bytes.fromhex("10 04000000"), "LIGHTS is not an IN report"),
        (bytes.fromhex("7f 00"), "unknown id"),
    ],
)
def test_bad_in_reports_raise_bad_report(data: bytes, why: str) -> None:
    with pytest.raises(BadReport):
        parse_in_report(data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        bytes.fromhex("10 0400"),
        bytes.fromhex("10 00000040"),
        SPOTS_VECTOR,
        b"\x10" + bytes(64),
    ],
)
def test_bad_out_reports_raise_bad_report(data: bytes) -> None:
    with pytest.raises(BadReport):
        parse_out_report(data)


def test_spot_bits_cover_positions_1_to_10() -> None:
    bits = [spot_bit(p, s) for p in range(1, 11) for s in range(3)]
    assert bits == list(range(SPOT_BITS))
    assert [bit_spot(b) for b in bits] == [(p, Spot(s)) for p in range(1, 11) for s in range(3)]
    for bad in [(0, 0), (11, 0), (1, 3), (1, -1)]:
        with pytest.raises(ValueError, match="must be"):
            spot_bit(*bad)
    with pytest.raises(ValueError, match="spot bit"):
        bit_spot(SPOT_BITS)


def test_reports_refuse_values_they_cannot_encode() -> None:
    with pytest.raises(ValueError, match="at most 12"):
        ValuesReport(1, tuple((b, 1) for b in range(13)))
    with pytest.raises(ValueError, match="twice"):
        ValuesReport(1, ((3, 1), (3, 2)))
    with pytest.raises(ValueError, match="u32"):
        ValuesReport(1, ((3, 1 << 32),))
    with pytest.raises(ValueError, match="spot bits"):
        SpotsReport(1, 1 << 30, 0)
    with pytest.raises(ValueError, match="u8"):
        SpotsReport(256, 0, 0)
    with pytest.raises(ValueError, match="spot bits"):
        LightsReport(1 << 31)


# ------------------------------------------------------------------ round trips

value_items = st.lists(
    st.tuples(st.integers(0, SPOT_BITS - 1), st.integers(0, 0xFFFF_FFFF)),
    max_size=MAX_VALUES_PER_REPORT,
    unique_by=lambda item: item[0],
)
in_reports = st.one_of(
    st.builds(SpotsReport, seq=seqs, present=masks, fault=masks),
    st.builds(ValuesReport, seq=seqs, values=value_items.map(tuple)),
)


@settings(max_examples=300)
@given(report=in_reports, pad=st.booleans())
def test_in_reports_round_trip(report: SpotsReport | ValuesReport, pad: bool) -> None:
    data = encode_report(report, pad=pad)
    assert len(data) <= 64
    assert parse_in_report(data) == report


@settings(max_examples=100)
@given(mask=masks, pad=st.booleans())
def test_lights_round_trip(mask: int, pad: bool) -> None:
    assert parse_out_report(encode_report(LightsReport(mask), pad=pad)) == LightsReport(mask)


@settings(max_examples=200)
@given(
    values=st.dictionaries(st.integers(0, SPOT_BITS - 1), st.integers(0, 10**7), max_size=30),
    seq=seqs,
)
def test_values_split_into_reports_of_at_most_12(values: dict[int, int], seq: int) -> None:
    reports = values_reports(seq, values.items())
    assert len(reports) == max(1, -(-len(values) // MAX_VALUES_PER_REPORT))
    assert all(r.seq == seq and len(r.values) <= MAX_VALUES_PER_REPORT for r in reports)
    assert dict(item for r in reports for item in r.values) == values
    for report in reports:
        assert parse_in_report(encode_report(report)) == report


@settings(max_examples=500)
@given(
    data=st.one_of(
        st.binary(max_size=80),
        st.builds(
            lambda report, tail: encode_report(report) + tail,
            in_reports,
            st.binary(max_size=8),
        ),
        st.builds(
            lambda report, at, byte: _replace(encode_report(report, pad=True), at, byte),
            in_reports,
            st.integers(0, 63),
            st.integers(0, 255),
        ),
    )
)
def test_any_bytes_parse_or_raise_bad_report(data: bytes) -> None:
    bad: BadReport | None = None
    try:
        report = parse_in_report(data)
    except BadReport as exc:
        bad = exc
    if bad is not None:
        assert bad.data == data
        return
    # Whatever parsed is exactly a report followed by zero padding.
    body = encode_report(report)
    assert data.startswith(body)
    assert not any(data[len(body) :])
    assert len(data) <= 64


def _replace(data: bytes, at: int, byte: int) -> bytes:
    return data[:at] + bytes([byte]) + data[at + 1 :]


# ------------------------------------------------------------------ simusb wire


def test_wire_messages_of_devices_md() -> None:
    device = decode_message(
        b'{"type": "device", "vid": 4617, "pid": 1, "serial": "B-7", "product": "Board"}'
    )
    assert device == DeviceMessage(0x1209, 0x0001, "B-7", "Board")
    packet = decode_message(b'{"type": "in", "ep": 129, "data": "0105430000000000000A"}\n')
    assert packet == PacketMessage("in", 0x81, bytes.fromhex("0105430000000000000a"))
    line = encode_message(PacketMessage("out", 1, LIGHTS_VECTOR))
    assert line.endswith(b"\n")
    assert decode_message(line) == PacketMessage("out", 1, LIGHTS_VECTOR)


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"type": "in", "ep": 129}',
        b'{"type": "in", "ep": 129, "data": "0g"}',
        b'{"type": "in", "ep": 129, "data": "012"}',
        b'{"type": "in", "ep": 300, "data": "01"}',
        b'{"type": "in", "ep": true, "data": "01"}',
        b'{"type": "device", "vid": "1209", "pid": 1}',
        b'{"type": "device", "vid": 4617, "pid": 1, "serial": 5}',
        b'{"type": "reboot"}',
        b"\xff\xfe",
        b"[" * 5000,
    ],
)
def test_bad_wire_lines_raise_bad_message(line: bytes) -> None:
    with pytest.raises(BadMessage):
        decode_message(line)


messages = st.one_of(
    st.builds(
        DeviceMessage,
        vid=st.integers(0, 0xFFFF),
        pid=st.integers(0, 0xFFFF),
        serial=st.text(max_size=20),
        product=st.text(max_size=40),
    ),
    st.builds(
        PacketMessage,
        direction=st.sampled_from(["in", "out"]),
        ep=st.integers(0, 255),
        data=st.binary(max_size=64),
    ),
)


@settings(max_examples=200)
@given(message=messages)
def test_wire_messages_round_trip(message: DeviceMessage | PacketMessage) -> None:
    line = encode_message(message)
    assert line.count(b"\n") == 1
    assert decode_message(line) == message


@settings(max_examples=300)
@given(line=st.binary(max_size=200))
def test_any_wire_line_decodes_or_raises_bad_message(line: bytes) -> None:
    with contextlib.suppress(BadMessage):
        decode_message(line)


@settings(max_examples=200)
@given(
    lines=st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    cuts=st.lists(st.integers(0, 2000), max_size=30),
)
def test_line_buffer_gives_the_same_lines_for_any_chunking(
    lines: list[bytes], cuts: list[int]
) -> None:
    cap = 32
    stream = b"".join(line + b"\n" for line in lines)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    buffer = LineBuffer(cap=cap)
    got: list[bytes] = []
    for start, end in itertools.pairwise(points):
        got += buffer.feed(stream[start:end])
    assert got == [line for line in lines if len(line) <= cap]
    assert buffer.overlong == sum(1 for line in lines if len(line) > cap)
