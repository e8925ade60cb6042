"""Reports of a scenario run: a verdict per scenario on the terminal, and JUnit XML.

The JUnit file has a ``testsuite`` per scenario and a ``testcase`` per
expectation (a skipped step is ``<skipped>``); each suite's ``properties``
give, per action step, the time from the rig's write on the line to the
controller's message that showed it taken (``latency ms step N (line L)``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from table_controller.rigs.scenario.results import ScenarioResult, Status, StepResult

_MARKS = {Status.PASS: "ok", Status.FAIL: "FAIL", Status.ERROR: "ERROR", Status.SKIP: "SKIP"}


def _where(result: ScenarioResult) -> str:
    return f" ({result.path})" if result.path is not None else ""


def step_label(r: StepResult) -> str:
    label = f"step {r.number}" if r.number else "setup"
    if r.line is not None:
        label += f" (line {r.line})"
    return f"{label} {r.step}"


def format_result(result: ScenarioResult, *, verbose: bool = False) -> str:
    """One scenario's report: a verdict line, then each failure or skip (every step if
    verbose)."""
    checked = len(result.results)
    bad = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    summary = f"{checked} expectations" if not bad else f"{bad} of {checked} not met"
    if skipped:
        summary += f", {skipped} skipped"
    lines = [
        f"{result.verdict:<5} {result.name}{_where(result)}: {summary}, {result.seconds:.1f} s"
    ]
    for r in result.results:
        if r.status is Status.PASS and not verbose:
            continue
        text = f"  {_MARKS[r.status]:<5} {step_label(r)}"
        lines.append(f"{text}: {r.detail}" if r.detail else text)
    return "\n".join(lines)


def _suite(root: ET.Element, result: ScenarioResult) -> None:
    suite = ET.SubElement(
        root,
        "testsuite",
        name=result.name,
        tests=str(len(result.results)),
        failures=str(len(result.failures)),
        errors=str(len(result.errors)),
        skipped=str(len(result.skipped)),
        time=f"{result.seconds:.3f}",
        timestamp=result.started.replace(tzinfo=None).isoformat(timespec="seconds"),
    )
    if result.path is not None:
        suite.set("file", str(result.path))
    if result.timings:
        props = ET.SubElement(suite, "properties")
        for t in result.timings:
            where = f"step {t.number}" + (f" (line {t.line})" if t.line is not None else "")
            ET.SubElement(
                props,
                "property",
                name=f"latency ms {where} {t.step} -> {t.caused}",
                value=f"{t.ms:.3f}",
            )
    for r in result.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"scenarios.{result.name}",
            name=step_label(r),
            time=f"{r.seconds:.3f}",
        )
        if result.path is not None:
            case.set("file", str(result.path))
            if r.line is not None:
                case.set("line", str(r.line))
        if r.status is Status.FAIL:
            fail = ET.SubElement(case, "failure", message=r.detail, type="ExpectationNotMet")
            fail.text = r.detail
        elif r.status is Status.ERROR:
            err = ET.SubElement(case, "error", message=r.detail, type="ScenarioError")
            err.text = r.detail
        elif r.status is Status.SKIP:
            ET.SubElement(case, "skipped", message=r.detail)


def junit_xml(results: Sequence[ScenarioResult]) -> str:
    """A JUnit XML report: a ``testsuite`` per scenario, a ``testcase`` per expectation."""
    root = ET.Element("testsuites", name="scenarios")
    for result in results:
        _suite(root, result)
    root.set("tests", str(sum(len(r.results) for r in results)))
    root.set("failures", str(sum(len(r.failures) for r in results)))
    root.set("errors", str(sum(len(r.errors) for r in results)))
    root.set("skipped", str(sum(len(r.skipped) for r in results)))
    root.set("time", f"{sum(r.seconds for r in results):.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
