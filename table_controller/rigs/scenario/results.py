"""How each step of a scenario went: the results the reports are made of."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"
    """The step needs a control this table does not have (a restart without a
    ``restart_command``): neither passed nor failed."""


@dataclass(frozen=True, slots=True)
class StepResult:
    """One expectation (or a step that could not be carried out) and how it went."""

    number: int
    """The step's number, from 1; 0 for the rig's own start."""
    line: int | None
    step: str
    status: Status
    detail: str = ""
    """What was seen instead, or what went wrong; empty when it passed."""
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class StepTiming:
    """How long the controller took to show that it had taken one of the rig's actions."""

    number: int
    line: int | None
    step: str
    caused: str
    """What showed it: ``card`` (event), ``state``, ``alert`` or ``answer`` (the console's)."""
    ms: float
    """From the rig's write on the line to that message's arrival at the rig."""


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    name: str
    path: Path | None
    started: datetime
    seconds: float
    results: tuple[StepResult, ...]
    timings: tuple[StepTiming, ...] = ()

    @property
    def failures(self) -> list[StepResult]:
        return [r for r in self.results if r.status is Status.FAIL]

    @property
    def errors(self) -> list[StepResult]:
        return [r for r in self.results if r.status is Status.ERROR]

    @property
    def skipped(self) -> list[StepResult]:
        return [r for r in self.results if r.status is Status.SKIP]

    @property
    def passed(self) -> bool:
        """Every step passed: a skipped step leaves the scenario not passed."""
        return all(r.status is Status.PASS for r in self.results)

    @property
    def verdict(self) -> str:
        if self.passed:
            return "PASS"
        if self.errors:
            return "ERROR"
        return "FAIL" if self.failures else "SKIP"


class StepFailed(Exception):
    """The controller did not do what a step needs; the rest of the scenario cannot run."""
