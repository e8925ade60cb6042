"""Reading scenario files: YAML to a validated :class:`Scenario`, every error with its line.

Files are validated by pydantic models before anything starts; an error names
the file, the step, its line and the field.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import ValidationError

from table_controller.rigs.errors import ScenarioError
from table_controller.rigs.scenario.fields import card_list
from table_controller.rigs.scenario.model import Scenario
from table_controller.rigs.scenario.steps import STEP_TYPES

SHIPPED_PACKAGE: Final = "simulators.scenarios"


@dataclass(frozen=True, slots=True)
class LoadedScenario:
    """A validated scenario and where it came from (for reports)."""

    name: str
    scenario: Scenario
    path: Path | None = None
    step_lines: tuple[int, ...] = ()

    def line_of(self, number: int) -> int | None:
        """The line of step ``number`` (1-based) in its file."""
        return self.step_lines[number - 1] if 0 < number <= len(self.step_lines) else None


def _node_line(node: yaml.Node | None, loc: Sequence[int | str]) -> int | None:
    """The line of the deepest YAML node that ``loc`` reaches."""
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if str(k.value) == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if 0 <= part < len(node.value) else None
        else:
            node = None
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def _describe_errors(exc: ValidationError, root: yaml.Node | None) -> list[str]:
    out: list[str] = []
    for err in exc.errors():
        loc = list(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        where = ""
        if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
            kind = loc[2] if len(loc) > 2 and loc[2] in STEP_TYPES else None
            if kind is not None:
                # The discriminator's tag repeats the step's key: leave it out.
                del loc[2]
            where = f"step {loc[1] + 1}" + (f" ({kind})" if kind else "")
            field_path = ".".join(str(p) for p in loc[2:])
        elif len(loc) >= 2 and loc[0] == "shoe":
            field_path = "shoe"
        else:
            field_path = ".".join(str(p) for p in loc)
        line = _node_line(root, loc)
        parts = [p for p in (f"line {line}" if line else "", where, field_path) if p]
        out.append(": ".join([*parts, msg]))
    return out


def _with_shoe_file(
    data: dict[str, Any], where: str, root: yaml.Node | None, path: Path | None
) -> dict[str, Any]:
    """The scenario with the cards of its ``shoe_file`` as its ``shoe``.

    The file's path is relative to the scenario file (not to the working
    directory), so a scenario and its shoe move together. It holds cards as the
    devices write them, separated by spaces or lines; ``#`` starts a comment.
    """
    line = _node_line(root, ["shoe_file"])
    at = f"{where}: line {line}: shoe_file" if line else f"{where}: shoe_file"
    name = data.pop("shoe_file")
    if "shoe" in data:
        raise ScenarioError(f"{at}: give the shoe as a list or as a file, not both")
    if not isinstance(name, str) or not name.strip():
        raise ScenarioError(f"{at}: the path of a file of cards, not {name!r}")
    base = path.parent if path is not None else Path.cwd()
    file = base / name
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{at}: cannot read {file}: {exc.strerror}") from None
    cards = [word for row in text.splitlines() for word in row.split("#", 1)[0].split()]
    try:
        card_list(cards)
    except ValueError as exc:
        raise ScenarioError(f"{at}: {file}: {exc}") from None
    return {**data, "shoe": cards}


def parse_scenario(text: str, *, name: str, path: Path | None = None) -> LoadedScenario:
    """Validate a scenario's YAML text; a ScenarioError names every bad field."""
    where = str(path) if path is not None else name
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: a scenario is a mapping with 'table', 'shoe' and 'steps'")
    if "shoe_file" in data:
        data = _with_shoe_file(data, where, root, path)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = _describe_errors(exc, root)
        raise ScenarioError(f"{where}: " + "\n  ".join(problems)) from None
    lines: tuple[int, ...] = ()
    if isinstance(root, yaml.MappingNode):
        steps = next((v for k, v in root.value if k.value == "steps"), None)
        if isinstance(steps, yaml.SequenceNode):
            lines = tuple(item.start_mark.line + 1 for item in steps.value)
    return LoadedScenario(scenario.name or name, scenario, path, lines)


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate one scenario file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read: {exc.strerror}") from None
    return parse_scenario(text, name=p.stem, path=p)


def shipped_dir() -> Path:
    """The folder of the scenarios shipped with the package."""
    return Path(str(importlib.resources.files(SHIPPED_PACKAGE)))


def shipped_scenarios() -> list[Path]:
    """Every scenario shipped with the package, by file name."""
    return sorted(shipped_dir().glob("*.yaml"))


def scenario_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, and every ``*.yaml`` of a folder given, in name order."""
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        out.extend(sorted(p.glob("*.yaml")) if p.is_dir() else [p])
    return out
