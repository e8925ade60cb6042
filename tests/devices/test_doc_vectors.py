"""The byte examples of docs/devices.md are test vectors: each decodes to what it says.

The table is read from the document itself, so an example changed there (or
one added without a meaning here) fails this test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drivers.console import frames as console
from drivers.lineframe.cards import Card
from drivers.lineframe.codec import LineDecoder, LineFrame
from drivers.sensors.frames import (
    LightsReport,
    SpotsReport,
    ValuesReport,
    encode_report,
    parse_in_report,
    parse_out_report,
)
from drivers.shoe import frames as shoe
from drivers.shoe.frames import ShoeCondition

DOC = Path(__file__).resolve().parents[2] / "docs" / "devices.md"

Expected = LineFrame | SpotsReport | ValuesReport | LightsReport

# Each example, with the frame or report it must be, and the parser that reads it
# on the side that receives it.
VECTORS: dict[str, tuple[str, Expected]] = {
    "$HELLO,SHOE-0001,1.4.2,0*54\\r\\n": ("shoe", shoe.HelloFrame("SHOE-0001", "1.4.2", 0)),
    "$CARD,1,AS*37\\r\\n": ("shoe", shoe.CardFrame(1, Card.parse("AS"))),
    "$CARD,2,TD*36\\r\\n": ("shoe", shoe.CardFrame(2, Card.parse("TD"))),
    "$MISREAD,3*5A\\r\\n": ("shoe", shoe.MisreadFrame(3)),
    "$COVER,250*56\\r\\n": ("shoe", shoe.CoverFrame(250)),
    "$STATUS,3,OK*23\\r\\n": ("shoe", shoe.StatusFrame(3, ShoeCondition.OK)),
    "$RESEND,2*15\\r\\n": ("to shoe", shoe.ResendFrame(2)),
    "$BTN,7,WAR,2*35\\r\\n": ("console", console.ButtonFrame(7, console.ConsoleAction.WAR, "2")),
    "$BTN,8,CARD,JH*5A\\r\\n": (
        "console",
        console.ButtonFrame(8, console.ConsoleAction.CARD, "JH"),
    ),
    "$STATUS,8*00\\r\\n": ("console", console.ConsoleStatusFrame(8)),
    "$ACK,7*52\\r\\n": ("to console", console.AckFrame(7)),
    "$NAK,7,NO_WAR_WAGER*70\\r\\n": ("to console", console.NakFrame(7, "NO_WAR_WAGER")),
    "01 05 43000000 00000000": ("sensors", SpotsReport(5, 0b1000011, 0)),
    "02 05 03 00 c4090000 01 f4010000 06 e8030000": (
        "sensors",
        ValuesReport(5, ((0, 2500), (1, 500), (6, 1000))),
    ),
    "10 04000000": ("to sensors", LightsReport(1 << 2)),
}

LINE_PARSERS = {
    "shoe": shoe.parse_report,
    "to shoe": shoe.parse_command,
    "console": console.parse_report,
    "to console": console.parse_command,
}


def doc_examples() -> list[str]:
    text = DOC.read_text()
    section = text.split("## Examples", 1)[1]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def test_the_document_lists_exactly_these_examples() -> None:
    assert doc_examples() == list(VECTORS)


@pytest.mark.parametrize("example", list(VECTORS))
def test_each_example_decodes_to_what_it_means_and_encodes_back(example: str) -> None:
    side, expected = VECTORS[example]
    if example.startswith("$"):
        raw = example.replace("\\r\\n", "\r\n").encode("ascii")
        assert LineDecoder(LINE_PARSERS[side]).feed(raw) == [expected]
        assert isinstance(expected, LineFrame)
        assert expected.encode() == raw
        return
    raw = bytes.fromhex(example.replace(" ", ""))
    parse = parse_out_report if side == "to sensors" else parse_in_report
    assert parse(raw) == expected
    assert not isinstance(expected, LineFrame)
    assert encode_report(expected) == raw
