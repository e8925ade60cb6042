"""The compiled engine: used only while it matches the sources, and identical in effect.

``table_controller/engine/native.py``: ``make engine`` compiles the rule modules with
mypyc; the package puts the build first on its path only when its digest matches
the sources. These tests hold the guard to that, and the compiled engine to the
interpreted one's outputs, input for input.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from table_controller.engine import native

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "table_controller" / "engine"

# Three seeded sessions, one per rule set (misreads, past-posts, covers, voids, wars),
# as one digest of every output (its repr: the values, field by field) and the final
# snapshot.
PROBE = """
import hashlib, json
from table_controller.engine import native
from table_controller.engine.rules import NY, STANDARD, UK
from tests.engine.helpers import random_session

digest, count = hashlib.sha256(), 0
for rules, seed in ((NY, 31), (UK, 32), (STANDARD, 33)):
    t = random_session(rules, seed, rounds=120)
    count += len(t.outputs)
    digest.update(repr(t.outputs).encode())
    digest.update(json.dumps(t.state.to_json(), sort_keys=True).encode())
print(json.dumps({"mode": native.mode(), "digest": digest.hexdigest(), "outputs": count}))
"""


def _compile_script() -> ModuleType:
    path = ROOT / "scripts" / "compile_engine.py"
    spec = importlib.util.spec_from_file_location("compile_engine", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _probe(**env: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _stamp(build: Path, sources: Path, suffix: str = native.SUFFIX) -> None:
    stamp = {
        "sources": native.sources_digest(sources),
        "suffix": suffix,
        "files": {p.name: native.file_digest(p) for p in build.iterdir() if p.name != native.STAMP},
    }
    (build / native.STAMP).write_text(json.dumps(stamp), encoding="utf-8")


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A copy of the engine's sources, with a build folder of stand-in files stamped as
    current (the guard reads names and digests; nothing here is imported)."""
    folder = tmp_path / "engine"
    folder.mkdir()
    for path in ENGINE.glob("*.py"):
        shutil.copy2(path, folder / path.name)
    build = folder / native.FOLDER
    build.mkdir()
    for name in native.build_files():
        (build / name).write_bytes(name.encode())
    _stamp(build, folder)
    return folder


def test_a_current_build_is_used(sources: Path) -> None:
    assert native.compiled_folder(sources, {}) == sources / native.FOLDER


def test_a_build_of_other_sources_is_not_used(sources: Path) -> None:
    """An edited source is never shadowed by an old build: the engine runs interpreted."""
    dealing = sources / "dealing.py"
    dealing.write_text(dealing.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert native.compiled_folder(sources, {}) is None


def test_a_new_source_file_makes_the_build_stale(sources: Path) -> None:
    (sources / "extra.py").write_text("X = 1\n", encoding="utf-8")
    assert native.compiled_folder(sources, {}) is None


def test_a_build_for_another_python_is_not_used(sources: Path) -> None:
    build = sources / native.FOLDER
    for path in list(build.iterdir()):
        path.rename(build / path.name.replace(native.SUFFIX, ".cpython-399-x86_64-linux-gnu.so"))
    _stamp(build, sources, suffix=".cpython-399-x86_64-linux-gnu.so")
    assert native.compiled_folder(sources, {}) is None
    assert native.compiled_folder(sources, {}, ".cpython-399-x86_64-linux-gnu.so") == build


@pytest.mark.parametrize("damage", ["missing", "extra", "changed", "unlisted"])
def test_a_partial_or_altered_build_is_not_used(sources: Path, damage: str) -> None:
    """A build half replaced, or with a file it did not make (an old one packed beside
    it, say), is never loaded: not one of its modules."""
    build = sources / native.FOLDER
    library = build / f"{native.GROUP}__mypyc{native.SUFFIX}"
    if damage == "missing":
        library.unlink()
    elif damage == "extra":
        (build / f"stale{native.SUFFIX}").write_bytes(b"old")
    elif damage == "changed":
        library.write_bytes(b"another build")
    else:
        library.unlink()
        _stamp(build, sources)  # a stamp that lists only what is there
    assert native.compiled_folder(sources, {}) is None


def test_no_build_or_a_damaged_stamp_is_interpreted(sources: Path) -> None:
    (sources / native.FOLDER / native.STAMP).write_bytes(b"\xff\xfe")
    assert native.compiled_folder(sources, {}) is None
    (sources / native.FOLDER / native.STAMP).write_text("[]", encoding="utf-8")
    assert native.compiled_folder(sources, {}) is None
    shutil.rmtree(sources / native.FOLDER)
    assert native.compiled_folder(sources, {}) is None


def test_the_environment_can_ask_for_the_interpreted_engine(sources: Path) -> None:
    assert native.compiled_folder(sources, {native.ENV: "interpreted"}) is None
    assert native.compiled_folder(sources, {native.ENV: "compiled"}) == sources / native.FOLDER


def test_the_checkout_is_built_where_it_can_be() -> None:
    """``make test`` runs ``make engine`` first: with a C compiler and Python's headers,
    the engine under test (and under the benchmark) is the compiled one."""
    why = _compile_script().missing_tools()
    if why is not None:
        pytest.skip(f"the engine cannot be compiled here: {why}")
    assert native.compiled_folder(ENGINE, {}) is not None, "run `make engine`"
    assert _probe()["mode"] == "compiled"


def test_compiled_and_interpreted_engines_give_identical_outputs() -> None:
    if native.compiled_folder(ENGINE, {}) is None:
        pytest.skip("no current compiled build to compare (make engine)")
    compiled = _probe()
    interpreted = _probe(**{native.ENV: "interpreted"})
    assert (compiled["mode"], interpreted["mode"]) == ("compiled", "interpreted")
    assert isinstance(compiled["outputs"], int)
    assert compiled["outputs"] > 1000
    assert compiled["digest"] == interpreted["digest"]
    assert compiled["outputs"] == interpreted["outputs"]
