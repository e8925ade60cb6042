"""Scenario files for test rigs, and ``table-controller scenario run``.

A scenario (YAML, ``docs/scenarios.md``) describes one table, the exact order
of the cards in its shoe, and steps: chips placed and taken, console presses,
cards drawn, faults (a misread, a dropped or lost read, a device unplugged or
silent, the broker away) and expectations (round records, alerts, events, the
phase). The runner plays it against the production controller through the
simulators over real transports and a real MQTT broker, and reports every
expectation as passed, failed or skipped, with what was seen instead.

The modules, by seam:

- ``fields``, ``expect``, ``steps``, ``model``: the file format (pydantic);
- ``loading``: YAML to a validated scenario, errors with their lines;
- ``evidence``, ``compare``: what the expectations see and how they compare;
- ``table``, ``runner``: the table a scenario plays on, and the step player;
- ``local``: a whole table on loopback; ``external``: a table under test
  over real cables (``--external rig.toml``, ``docs/hil.md``);
- ``results``, ``report``: verdicts, the terminal report and JUnit XML;
- ``command``: the command line.
"""

from __future__ import annotations

from table_controller.rigs.errors import ScenarioError
from table_controller.rigs.scenario.command import configure, run
from table_controller.rigs.scenario.loading import (
    LoadedScenario,
    load_scenario,
    parse_scenario,
    scenario_files,
    shipped_dir,
    shipped_scenarios,
)
from table_controller.rigs.scenario.local import run_scenario, run_scenarios
from table_controller.rigs.scenario.model import Scenario
from table_controller.rigs.scenario.report import format_result, junit_xml
from table_controller.rigs.scenario.results import ScenarioResult, Status, StepResult

__all__ = [
    "LoadedScenario",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "Status",
    "StepResult",
    "configure",
    "format_result",
    "junit_xml",
    "load_scenario",
    "parse_scenario",
    "run",
    "run_scenario",
    "run_scenarios",
    "scenario_files",
    "shipped_dir",
    "shipped_scenarios",
]
