"""The fuzz harness: its targets take every byte sequence, and it counts what escapes."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz.__main__ import Harness
from fuzz.targets import TARGETS, Target

RUN_BOUND_S = 120.0


@settings(max_examples=300)
@given(index=st.integers(0, len(TARGETS) - 1), data=st.binary(max_size=600))
def test_every_target_takes_any_bytes(index: int, data: bytes) -> None:
    TARGETS[index].run(data)


def test_every_seed_is_taken_without_an_escape() -> None:
    harness = Harness()
    for seed in harness.seeds():
        harness.one_input(seed)
    assert all(t.inputs for t in harness.tally.values())
    assert harness.report("seeds")["exceptions"] == 0


def test_an_escape_is_counted_and_kept() -> None:
    def broken(data: bytes) -> None:
        raise KeyError(data)

    harness = Harness()
    harness.targets = (Target("broken", broken, (b"x",)),)
    harness.tally = {"broken": harness.tally["shoe line codec"]}
    harness.one_input(b"\x00boom")
    assert harness.report("test")["exceptions"] == 1
    assert harness.first_escape is not None
    assert harness.first_escape[:2] == ("broken", b"boom")


@pytest.mark.parametrize("engine", ["hypothesis", "atheris"])
async def test_python_m_fuzz_prints_bytes_per_parser_and_no_exception(engine: str) -> None:
    if engine == "atheris" and importlib.util.find_spec("atheris") is None:
        pytest.skip("atheris is not installed here: the hypothesis engine stands in")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fuzz",
        "--engine",
        engine,
        "--runs",
        "400",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    async with asyncio.timeout(RUN_BOUND_S):
        out, _ = await proc.communicate()
    text = out.decode()
    assert proc.returncode == 0, text
    for target in TARGETS:
        assert target.name in text
    assert "exceptions: 0" in text
