"""``python -m fuzz``: fuzz every device parser for a bounded run and report.

::

    python -m fuzz                     # 100,000 inputs (under a minute on one core)
    python -m fuzz --runs 20000        # a quick run
    python -m fuzz --seconds 300       # a longer one
    python -m fuzz --json out.json     # the figures as JSON too

One input's first byte picks the target, the rest is what the target parses,
so coverage guidance serves all targets at once. The report gives, per
parser, the inputs and bytes it was tried with and the exceptions that
escaped; the exit status is 1 if any did (the first one's input and traceback
are printed), 0 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_RUNS = 100_000
MAX_INPUT_BYTES = 4096


@dataclass(slots=True)
class Tally:
    """What one parser was tried with."""

    inputs: int = 0
    bytes: int = 0
    exceptions: int = 0


class Harness:
    """Dispatches inputs to targets and keeps the tally."""

    def __init__(self) -> None:
        from fuzz.targets import TARGETS

        self.targets = TARGETS
        self.tally = {target.name: Tally() for target in TARGETS}
        self.first_escape: tuple[str, bytes, str] | None = None
        self.started = time.monotonic()

    def one_input(self, data: bytes) -> None:
        if not data:
            return
        target = self.targets[data[0] % len(self.targets)]
        body = data[1:]
        tally = self.tally[target.name]
        tally.inputs += 1
        tally.bytes += len(body)
        try:
            target.run(body)
        except Exception:  # every escape is counted and the run goes on
            tally.exceptions += 1
            if self.first_escape is None:
                self.first_escape = (target.name, body, traceback.format_exc())

    def seeds(self) -> list[bytes]:
        """One seed input per target and example of docs/devices.md, with a few cut sizes."""
        return [
            bytes([index, step]) + seed
            for index, target in enumerate(self.targets)
            for seed in target.seeds
            for step in (0, 6, 16)
        ]

    def report(self, engine: str) -> dict[str, object]:
        return {
            "engine": engine,
            "seconds": round(time.monotonic() - self.started, 1),
            "parsers": {name: asdict(t) for name, t in self.tally.items()},
            "exceptions": sum(t.exceptions for t in self.tally.values()),
        }


def _print(report: dict[str, object], harness: Harness, json_path: Path | None) -> None:
    parsers = report["parsers"]
    assert isinstance(parsers, dict)
    print(f"\nfuzz ({report['engine']}, {report['seconds']} s)")
    print(f"  {'parser':<24} {'inputs':>10} {'bytes tried':>14} {'exceptions':>11}")
    for name, row in parsers.items():
        print(f"  {name:<24} {row['inputs']:>10,} {row['bytes']:>14,} {row['exceptions']:>11}")
    print(f"  exceptions: {report['exceptions']}")
    if harness.first_escape is not None:
        name, body, trace = harness.first_escape
        print(f"\nfirst escape, in {name}, on input {body!r}:\n{trace}")
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2) + "\n")
    sys.stdout.flush()


def _run_atheris(harness: Harness, runs: int, seconds: int | None, json_path: Path | None) -> None:
    import atheris

    corpus = tempfile.TemporaryDirectory(prefix="fuzz-corpus-")
    for index, seed in enumerate(harness.seeds()):
        (Path(corpus.name) / f"seed-{index}").write_bytes(seed)
    deadline = None if seconds is None else time.monotonic() + seconds
    done = 0

    def one_input(data: bytes) -> None:
        nonlocal done
        harness.one_input(data)
        done += 1
        if done >= runs or (deadline is not None and time.monotonic() >= deadline):
            # libFuzzer never returns from Fuzz() and leaves by a path that skips Python's
            # exit handlers: report, clean up and leave here.
            report = harness.report("atheris")
            _print(report, harness, json_path)
            corpus.cleanup()
            os._exit(1 if report["exceptions"] else 0)

    argv = [sys.argv[0], f"-max_len={MAX_INPUT_BYTES}", "-print_pcs=0", corpus.name]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def _run_hypothesis(harness: Harness, runs: int, seconds: int | None) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    seeds = harness.seeds()
    inputs = st.one_of(
        st.binary(min_size=1, max_size=MAX_INPUT_BYTES),
        st.sampled_from(seeds),
        st.builds(lambda seed, cut: seed[:cut], st.sampled_from(seeds), st.integers(2, 96)),
    )
    deadline = None if seconds is None else time.monotonic() + seconds

    @settings(
        max_examples=runs,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def one(data: bytes) -> None:
        if deadline is None or time.monotonic() < deadline:
            harness.one_input(data)

    one()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="inputs to try")
    parser.add_argument("--seconds", type=int, help="stop after this long, whatever the runs")
    parser.add_argument("--json", type=Path, help="write the figures to this file too")
    parser.add_argument(
        "--engine",
        choices=("auto", "atheris", "hypothesis"),
        default="auto",
        help="atheris (coverage-guided) when installed, else hypothesis (default auto)",
    )
    options = parser.parse_args(argv)
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    engine = options.engine
    if engine == "auto":
        engine = "atheris" if importlib.util.find_spec("atheris") else "hypothesis"
    if engine == "atheris":
        import atheris

        with atheris.instrument_imports(include=["drivers"]):
            harness = Harness()
        _run_atheris(harness, options.runs, options.seconds, options.json)
        return 2  # not reached: the run ends the process
    harness = Harness()
    _run_hypothesis(harness, options.runs, options.seconds)
    report = harness.report("hypothesis")
    _print(report, harness, options.json)
    return 1 if report["exceptions"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
