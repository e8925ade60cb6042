"""A simulator puts only frames of docs/devices.md on the wire: a value that cannot stand as
one field of a frame is refused where it enters, not sent for a driver to drop."""

from __future__ import annotations

import pytest

from drivers.console import ConsoleAction
from drivers.lineframe.codec import LineDecoder
from drivers.shoe.frames import HelloFrame, parse_report
from simulators.commands import console_commands
from simulators.console import ConsoleSimulator
from simulators.errors import FrameFieldError
from simulators.shoe import ShoeSimulator
from table_controller.cli import main

NOT_A_FIELD = [
    ("D17,X", "a comma"),
    ("D*17", r"'\*'"),
    ("$D17", r"'\$'"),
    ("D\x0717", "control character"),
    ("D\x7f", "control character"),
    ("DÉ", "non-ASCII character"),
    ("", "empty"),
]


@pytest.mark.parametrize(("arg", "complaint"), NOT_A_FIELD)
def test_a_press_argument_that_is_no_field_is_refused(arg: str, complaint: str) -> None:
    sim = ConsoleSimulator()
    with pytest.raises(FrameFieldError, match=rf"^DEALER argument .*{complaint}"):
        sim.press(ConsoleAction.DEALER, arg)
    # Nothing was pressed: no number taken, nothing to send again.
    assert (sim.last_k, sim.presses, sim.unanswered) == (0, {}, [])
    assert sim.press(ConsoleAction.DEALER, "D-17") == 1
    assert sim.presses[1].encode() == b"$BTN,1,DEALER,D-17*31\r\n"


def test_a_press_too_long_for_a_frame_is_refused() -> None:
    sim = ConsoleSimulator()
    with pytest.raises(ValueError, match=r"^press 1: frame body is 91 bytes, at most 90"):
        sim.press(ConsoleAction.DEALER, "D" * 78)
    assert sim.presses == {}
    sim.press(ConsoleAction.DEALER, "D" * 77)
    assert len(sim.presses[1].encode()) == 96


async def test_the_stdin_press_refuses_a_comma() -> None:
    sim = ConsoleSimulator()
    act, _ = console_commands(sim)
    with pytest.raises(ValueError, match=r"^DEALER argument 'D17,X' holds a comma"):
        await act(["press", "dealer", "d17,x"])
    assert sim.presses == {}


@pytest.mark.parametrize(("serial", "complaint"), NOT_A_FIELD)
def test_a_shoe_serial_that_is_no_field_is_refused(serial: str, complaint: str) -> None:
    with pytest.raises(FrameFieldError, match=rf"^serial .*{complaint}"):
        ShoeSimulator(serial=serial)


def test_a_shoe_firmware_that_is_no_field_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^firmware '1,4' holds a comma"):
        ShoeSimulator(firmware="1,4")


def test_a_hello_too_long_for_a_frame_is_refused() -> None:
    # HELLO must fit with any read count a driver reads (up to ten digits).
    with pytest.raises(ValueError, match=r"^HELLO of serial 'S{68}' and firmware '1\.0\.0'"):
        ShoeSimulator(serial="S" * 68)
    hello = HelloFrame(ShoeSimulator(serial="S" * 67).serial, "1.0.0", 9_999_999_999).encode()
    assert len(hello) == 96
    assert LineDecoder(parse_report).feed(hello) == [HelloFrame("S" * 67, "1.0.0", 9_999_999_999)]


def test_sim_shoe_refuses_a_serial_with_a_comma(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sim", "shoe", "--serial", "SHOE,7"])
    assert exit_.value.code == 2
    assert "argument --serial: serial 'SHOE,7' holds a comma" in capsys.readouterr().err
