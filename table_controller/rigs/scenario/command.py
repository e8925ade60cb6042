"""``table-controller scenario run|check``: the command line of the scenario runner."""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from table_controller.feed.broker import parse_broker_url
from table_controller.rigs.errors import RigConfigError, ScenarioError
from table_controller.rigs.scenario.loading import (
    LoadedScenario,
    load_scenario,
    scenario_files,
    shipped_scenarios,
)
from table_controller.rigs.scenario.local import run_scenarios
from table_controller.rigs.scenario.report import format_result, junit_xml
from table_controller.rigs.scenario.results import ScenarioResult


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run_p = sub.add_parser("run", help="play scenario files against the controller")
    run_p.add_argument("files", nargs="*", type=Path, help="scenario files or folders")
    run_p.add_argument(
        "--shipped", action="store_true", help="also every scenario shipped with the package"
    )
    run_p.add_argument("--broker", metavar="URL", help="mqtt://HOST:PORT (default: start one)")
    run_p.add_argument(
        "--external",
        type=Path,
        metavar="RIG.toml",
        help="play a table under test over the lines and the broker this file names "
        "(docs/hil.md): no controller or broker is started",
    )
    run_p.add_argument("--junit", type=Path, metavar="OUT.xml", help="write a JUnit XML report")
    run_p.add_argument("-v", "--verbose", action="store_true", help="list passed steps too")
    run_p.add_argument(
        "--log-level",
        default="CRITICAL",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="the controller's log on stderr (faults are expected: quiet by default)",
    )
    check_p = sub.add_parser("check", help="validate scenario files without playing them")
    check_p.add_argument("files", nargs="*", type=Path, help="scenario files or folders")
    check_p.add_argument("--shipped", action="store_true", help="the shipped scenarios too")


def _load_all(args: argparse.Namespace) -> list[LoadedScenario] | None:
    files = scenario_files(args.files) + (shipped_scenarios() if args.shipped else [])
    if not files:
        print("table-controller scenario: no scenario files given", file=sys.stderr)
        return None
    loaded: list[LoadedScenario] = []
    bad = False
    for path in files:
        try:
            loaded.append(load_scenario(path))
        except ScenarioError as exc:
            print(exc, file=sys.stderr)
            bad = True
    return None if bad else loaded


def _broker_problem(url: str) -> str | None:
    """Why the broker at ``url`` cannot be used, or None."""
    try:
        address = parse_broker_url(url)
    except ValueError as exc:
        return str(exc)
    try:
        with socket.create_connection((address.host, address.port), timeout=3.0):
            return None
    except OSError as exc:
        return f"cannot reach the broker at {url}: {exc.strerror or exc}"


def run(args: argparse.Namespace) -> int:
    loaded = _load_all(args)
    if loaded is None:
        return 2
    if args.action == "check":
        for s in loaded:
            print(f"ok    {s.name} ({s.path}): {len(s.scenario.steps)} steps")
        return 0
    if args.broker is not None:
        problem = _broker_problem(args.broker)
        if problem is not None:
            print(f"table-controller scenario: {problem}", file=sys.stderr)
            return 2
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    def progress(result: ScenarioResult) -> None:
        print(format_result(result, verbose=args.verbose), flush=True)

    if args.external is not None:
        if args.broker is not None:
            print(
                "table-controller scenario: --broker is rig.toml's with --external", file=sys.stderr
            )
            return 2
        return _run_external(args, loaded, progress)
    results = asyncio.run(run_scenarios(loaded, broker_url=args.broker, progress=progress))
    _totals(results)
    return _finish(args, results)


def _totals(results: list[ScenarioResult]) -> None:
    passed = sum(1 for r in results if r.passed)
    skipped = sum(1 for r in results if r.verdict == "SKIP")
    text = f"{passed} of {len(results)} scenarios passed"
    if skipped:
        text += f", {skipped} skipped"
    print(f"{text} in {sum(r.seconds for r in results):.1f} s")


def _finish(args: argparse.Namespace, results: list[ScenarioResult]) -> int:
    if args.junit is not None:
        args.junit.write_text(junit_xml(results), encoding="utf-8")
    bad = any(r.failures or r.errors for r in results)
    return 1 if bad or not any(r.passed for r in results) else 0


def _run_external(
    args: argparse.Namespace,
    loaded: list[LoadedScenario],
    progress: Callable[[ScenarioResult], None],
) -> int:
    # Only on this path: a loopback run needs none of the serial-line code.
    from table_controller.rigs.scenario.external import run_external
    from table_controller.rigs.scenario.rigfile import load_rig
    from table_controller.rigs.scenario.summary import summary_page

    try:
        rig = load_rig(args.external)
    except RigConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    run = asyncio.run(run_external(rig, loaded, progress=progress))
    _totals(run.results)
    print(summary_page(run), flush=True)
    return _finish(args, run.results)
