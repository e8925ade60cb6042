"""The recorder runs on a pit server: it imports the feed and the engine, never the table."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("table_controller.service", "table_controller.rigs", "simulators", "drivers")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_recorder_imports_no_table_side_package() -> None:
    files = sorted((ROOT / "table_controller" / "recorder").rglob("*.py"))
    files += [ROOT / "table_controller" / "cli" / n for n in ("recorder.py", "records.py")]
    wrong = {
        str(f.relative_to(ROOT)): sorted(
            # The one retry delay of the project lives at its lowest layer; no device code.
            m
            for m in _imports(f)
            if m.startswith(FORBIDDEN) and m != "drivers.backoff"
        )
        for f in files
    }
    assert {f: bad for f, bad in wrong.items() if bad} == {}
