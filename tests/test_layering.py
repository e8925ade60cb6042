"""The import directions of STYLE.md: drivers import nothing of ours, simulators only drivers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"table_controller", "drivers", "simulators", "bench", "tests"}
ALLOWED = {
    "drivers": {"drivers"},
    "simulators": {"drivers", "simulators"},
    "table_controller": {"table_controller", "drivers", "simulators"},
}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_go_one_way(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no modules found in {package}"
    wrong = {
        str(f.relative_to(ROOT)): sorted(_imported_packages(f) - ALLOWED[package]) for f in files
    }
    assert {f: bad for f, bad in wrong.items() if bad} == {}


def test_engine_is_sans_io() -> None:
    """The engine awaits nothing, reads no clock and opens nothing (STYLE.md)."""
    engine = ROOT / "table_controller" / "engine"
    forbidden_modules = {"asyncio", "socket", "serial", "usb", "sqlite3", "aiomqtt", "time"}
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
