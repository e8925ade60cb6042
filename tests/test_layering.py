"""The import directions of docs/architecture.md, checked two ways.

Directly, by reading every module's import statements; and transitively, by importing a whole
package in a fresh interpreter and looking at ``sys.modules``, so that an import that drags I/O
into the engine through a third module fails too. And the size of every module: at most 400
lines, tests included.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"table_controller", "drivers", "simulators", "bench", "tests", "fuzz"}

# What each package may import of ours, directly. ``cli`` and ``rigs`` sit on top.
TC = "table_controller"
ALLOWED: dict[str, set[str]] = {
    "drivers": {"drivers"},
    "simulators": {"drivers", "simulators"},
    f"{TC}.engine": {f"{TC}.engine"},
    f"{TC}.feed": {f"{TC}.engine", f"{TC}.feed", "drivers"},
    f"{TC}.service": {f"{TC}.engine", f"{TC}.feed", f"{TC}.service", "drivers"},
    f"{TC}.pit": {f"{TC}.engine", f"{TC}.feed", f"{TC}.pit"},
    f"{TC}.tools": {f"{TC}.engine", f"{TC}.feed", f"{TC}.service", f"{TC}.tools"},
    # The recorder's theo and hold intervals come from the odds tool's exact figures.
    f"{TC}.recorder": {
        f"{TC}.engine",
        f"{TC}.feed",
        f"{TC}.recorder",
        f"{TC}.tools.odds",
        "drivers.backoff",
    },
    f"{TC}.rigs": {TC, "drivers", "simulators"},
    f"{TC}.cli": {TC, "drivers"},
}
# Modules whose import must not load these, even indirectly.
ENGINE_FORBIDDEN = ("serial", "usb", "asyncio", "sqlite3", "socket", "aiomqtt", "paho")


def _package_path(package: str) -> Path:
    return ROOT.joinpath(*package.split("."))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module of ours that the file imports, as a dotted name (relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = _module_name(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in OURS}


def _allowed(name: str, allowed: set[str]) -> bool:
    return any(name == a or name.startswith(f"{a}.") for a in allowed)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_go_one_way(package: str) -> None:
    folder = _package_path(package)
    if not folder.exists():
        pytest.fail(f"{package} is missing")
    files = sorted(folder.rglob("*.py"))
    assert files, f"no modules found in {package}"
    wrong: dict[str, list[str]] = {}
    for f in files:
        # ``table_controller.X`` as a bare package import (``from table_controller import
        # __version__``) is the version string only.
        bad = sorted(n for n in _imports(f) if n != TC and not _allowed(n, ALLOWED[package]))
        if bad and bad != [f"{TC}.__version__"]:
            wrong[str(f.relative_to(ROOT))] = bad
    assert wrong == {}


def test_only_rigs_import_the_simulators() -> None:
    importers = {
        str(f.relative_to(ROOT))
        for f in sorted(ROOT.joinpath(TC).rglob("*.py"))
        if any(n.split(".")[0] == "simulators" for n in _imports(f))
    }
    assert {f for f in importers if not f.startswith(f"{TC}/rigs/")} == set()


_PROBE = """
import importlib, json, pkgutil, sys
loaded_before = set(sys.modules)
for name in sys.argv[1:]:
    package = importlib.import_module(name)
    if hasattr(package, "__path__"):
        for info in pkgutil.walk_packages(package.__path__, prefix=name + "."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
print(json.dumps(sorted(set(sys.modules) - loaded_before)))
"""


def _loaded_by(*packages: str) -> set[str]:
    """The modules that importing every module of the packages loads, in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *packages],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(out.stdout))


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_the_engine_loads_no_io() -> None:
    loaded = _loaded_by(f"{TC}.engine")
    assert sorted(_tops(loaded) & set(ENGINE_FORBIDDEN)) == []
    assert (
        sorted(m for m in loaded if m.startswith(f"{TC}.") and not m.startswith(f"{TC}.engine"))
        == []
    )


def test_the_pit_display_loads_nothing_of_the_service() -> None:
    loaded = _loaded_by(f"{TC}.pit")
    assert sorted(m for m in loaded if m.startswith((f"{TC}.service", "simulators"))) == []


def test_drivers_load_nothing_of_ours() -> None:
    loaded = _loaded_by("drivers")
    assert sorted(_tops(loaded) & (OURS - {"drivers"})) == []


@pytest.mark.parametrize(
    "package", [f"{TC}.engine", f"{TC}.feed", f"{TC}.service", f"{TC}.pit", f"{TC}.tools"]
)
def test_only_rigs_load_the_simulators(package: str) -> None:
    loaded = _loaded_by(package)
    assert sorted(m for m in loaded if m.startswith(("simulators", f"{TC}.rigs"))) == []


def test_the_probe_sees_an_indirect_import() -> None:
    """The transitive check is able to fail: the service, by its config, loads the serial stack."""
    assert "serial" in _tops(_loaded_by(f"{TC}.service"))


def test_engine_is_sans_io() -> None:
    """The engine awaits nothing, reads no clock and opens nothing (docs/architecture.md)."""
    engine = ROOT / TC / "engine"
    forbidden_modules = {*ENGINE_FORBIDDEN, "time"}
    offenders: dict[str, list[str]] = {}
    for f in sorted(engine.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        bad: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bad += [a.name for a in node.names if a.name.split(".")[0] in forbidden_modules]
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.module.split(".")[0] in forbidden_modules:
                    bad.append(node.module)
            elif isinstance(node, (ast.Await, ast.AsyncFunctionDef)):
                bad.append(f"async at line {node.lineno}")
            elif isinstance(node, ast.Attribute) and node.attr in {"now", "utcnow", "today"}:
                bad.append(f"clock read at line {node.lineno}")
        if bad:
            offenders[str(f.relative_to(ROOT))] = bad
    assert offenders == {}


MAX_LINES = 400
# Generated Python files, which the limit does not apply to. None is tracked today: the
# generated interface documents (docs/schemas/*.json, docs/asyncapi.yaml) are not Python,
# and the engine's mypyc build (table_controller/engine/_compiled/) is git-ignored.
GENERATED: frozenset[str] = frozenset()


def test_no_module_is_over_400_lines() -> None:
    """Every tracked Python file outside generated code, tests and helpers included."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    lines = {
        name: len((ROOT / name).read_text(encoding="utf-8").splitlines())
        for name in tracked
        if name not in GENERATED and (ROOT / name).is_file()
    }
    assert lines, "git lists no Python files"
    over = [f"{name}: {n} lines" for name, n in sorted(lines.items()) if n > MAX_LINES]
    assert over == [], f"over {MAX_LINES} lines:\n" + "\n".join(over)
