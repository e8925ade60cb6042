"""What each fuzz target does with its bytes, and what counts as an escape.

Each target takes arbitrary bytes and drives one parser the way the drivers
do. A target may only return: any exception it lets out, or an invariant it
finds broken (``AssertionError``), is an escape. The parsers' own refusals
(``BadReport``, ``BadMessage``) are the expected answer to garbage and are
caught here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from drivers.console import frames as console_frames
from drivers.errors import BadMessage, BadReport
from drivers.lineframe.codec import MAX_FRAME_BYTES, LineDecoder, LineFrame
from drivers.sensors.frames import (
    MAX_PACKET_BYTES,
    encode_report,
    parse_in_report,
    parse_out_report,
)
from drivers.sensors.protocol import SnapshotAssembler
from drivers.sensors.simusb import LineBuffer, decode_message, encode_message
from drivers.shoe import frames as shoe_frames
from drivers.shoe.frames import ShoeReport
from drivers.shoe.protocol import ShoeProtocol


def chunks(data: bytes, most: int = 17) -> Iterator[bytes]:
    """``data`` cut as a port might deliver it: the first byte sets the size of the cuts
    (1 to ``most`` bytes)."""
    if not data:
        return
    step, rest = data[0] % most + 1, data[1:]
    for start in range(0, len(rest), step):
        yield rest[start : start + step]


def _line_codec(parse: Callable[[str], LineFrame]) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        decoder: LineDecoder[LineFrame] = LineDecoder(parse)
        for chunk in chunks(data):
            for frame in decoder.feed(chunk):
                # Whatever was taken is a frame that encodes back to what decodes as itself.
                assert LineDecoder(parse).feed(frame.encode()) == [frame], frame
            assert decoder.buffered < MAX_FRAME_BYTES, decoder.buffered

    return run


def sensor_in(data: bytes) -> None:
    """IN reports, each packet at most 64 bytes, into the snapshot assembler."""
    assembler = SnapshotAssembler()
    for packet in chunks(data, MAX_PACKET_BYTES + 8):
        try:
            report = parse_in_report(packet)
        except BadReport:
            continue
        body = encode_report(report)
        assert packet.startswith(body), packet
        assert not any(packet[len(body) :]), packet
        assembler.feed(report)
    whole = data[:MAX_PACKET_BYTES]
    with contextlib.suppress(BadReport):
        parse_in_report(whole)


def sensor_out(data: bytes) -> None:
    """OUT reports, as the simulated board parses LIGHTS."""
    for packet in (data, *chunks(data, MAX_PACKET_BYTES + 8)):
        try:
            lights = parse_out_report(packet)
        except BadReport:
            continue
        assert packet.startswith(encode_report(lights)), packet


def simusb_wire(data: bytes) -> None:
    """The simusb TCP wire: lines cut by the capped splitter, each decoded or refused."""
    buffer = LineBuffer(cap=512)
    for chunk in chunks(data):
        for line in buffer.feed(chunk):
            assert len(line) <= 512
            try:
                message = decode_message(line)
            except BadMessage:
                continue
            assert decode_message(encode_message(message)) == message, message


def shoe_link(data: bytes) -> None:
    """Decoded shoe reports through the shoe's link rules, time passing between chunks."""
    decoder: LineDecoder[ShoeReport] = LineDecoder(shoe_frames.parse_report)
    protocol = ShoeProtocol()
    now = 0.0
    protocol.connection_made(now)
    taken = protocol.taken
    for index, chunk in enumerate(chunks(data)):
        for frame in decoder.feed(chunk):
            protocol.frame_received(frame, now)
        now += (chunk[0] if chunk else index) / 64
        deadline = protocol.deadline()
        if deadline is not None and now >= deadline and protocol.timer(now).lost is not None:
            protocol.connection_made(now)
        # Reads are handed on in order; only a HELLO announcing a reboot restarts the count.
        assert protocol.taken >= taken or protocol.taken == 0, (taken, protocol.taken)
        taken = protocol.taken


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    run: Callable[[bytes], None]
    seeds: tuple[bytes, ...]


_LINE_SEEDS = (
    b"$HELLO,SHOE-0001,1.4.2,0*54\r\n",
    b"$CARD,1,AS*37\r\n$CARD,2,TD*36\r\n",
    b"$MISREAD,3*5A\r\n$COVER,250*56\r\n$STATUS,3,OK*23\r\n",
    b"$BTN,7,WAR,2*35\r\n$BTN,8,CARD,JH*5A\r\n$STATUS,8*00\r\n",
    b"$RESEND,2*15\r\n$ACK,7*52\r\n$NAK,7,NO_WAR_WAGER*70\r\n",
)
_SENSOR_SEEDS = (
    bytes.fromhex("0105430000000000000000"),
    bytes.fromhex("02050300c409000001f401000006e8030000"),
    bytes.fromhex("1004000000"),
)
_WIRE_SEEDS = (
    b'{"type": "device", "vid": 4617, "pid": 1, "serial": "S", "product": "P"}\n',
    b'{"type": "in", "ep": 129, "data": "010543000000"}\n{"type": "out", "ep": 1, "data": "10"}\n',
)

TARGETS: tuple[Target, ...] = (
    Target("shoe line codec", _line_codec(shoe_frames.parse_report), _LINE_SEEDS),
    Target("console line codec", _line_codec(console_frames.parse_report), _LINE_SEEDS),
    Target("shoe command codec", _line_codec(shoe_frames.parse_command), _LINE_SEEDS),
    Target("console command codec", _line_codec(console_frames.parse_command), _LINE_SEEDS),
    Target("shoe link rules", shoe_link, _LINE_SEEDS),
    Target("sensor IN reports", sensor_in, _SENSOR_SEEDS),
    Target("sensor OUT reports", sensor_out, _SENSOR_SEEDS),
    Target("simusb wire", simusb_wire, _WIRE_SEEDS),
)
