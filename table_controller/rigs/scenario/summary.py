"""The one page a rig engineer hands on after an external run: the table under test as
its ``status`` and the shoe's ``HELLO`` describe it, the verdicts, and the time from
a card's read to its ``card`` event."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drivers.shoe.frames import HelloFrame
from table_controller.rigs.scenario.results import ScenarioResult, Status
from table_controller.rigs.scenario.rigfile import RigSection


@dataclass
class ExternalRun:
    """A run's results, and what the table said of itself (for the summary)."""

    rig: RigSection
    results: list[ScenarioResult] = field(default_factory=list)
    status: dict[str, Any] | None = None
    hello: HelloFrame | None = None
    board_serial: str | None = None
    alerts: int = 0


def summary_page(run: ExternalRun) -> str:
    """One page on the run: the table as it described itself, then the verdicts."""
    status = run.status or {}
    lines = [
        f"table {run.rig.table} at {run.rig.site} on {run.rig.broker}",
        f"  controller version {status.get('version', '?')}, rules {status.get('rules', '?')}, "
        f"{status.get('decks', '?')} decks, {status.get('positions', '?')} positions",
    ]
    for name, device in (status.get("devices") or {}).items():
        detail = f" ({device['detail']})" if device.get("detail") else ""
        lines.append(f"  {name:<8} {device['state']}{detail}")
    if run.hello is not None:
        lines.append(f"  shoe HELLO: serial {run.hello.serial}, firmware {run.hello.firmware}")
    if run.board_serial is not None:
        lines.append(f"  sensor board (the rig's): serial {run.board_serial}")
    counts = {
        v: sum(1 for r in run.results if r.verdict == v) for v in ("PASS", "FAIL", "ERROR", "SKIP")
    }
    lines.append(
        f"scenarios: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['ERROR']} errors, "
        f"{counts['SKIP']} skipped; alerts raised {run.alerts}"
    )
    for r in run.results:
        if r.verdict != "PASS":
            why = next((s.detail for s in r.results if s.status is not Status.PASS), "")
            lines.append(f"  {r.verdict:<5} {r.name}: {why}")
    timed = [t for r in run.results for t in r.timings if t.caused == "card"]
    if timed:
        ms = sorted(t.ms for t in timed)
        lines.append(
            f"card to card event: {len(ms)} steps, median {ms[len(ms) // 2]:.1f} ms, "
            f"max {ms[-1]:.1f} ms"
        )
    return "\n".join(lines)
