"""The rule modules compiled to C by mypyc, used only while they match the sources.

``make engine`` (``scripts/compile_engine.py``, run by ``make test``, ``make demo`` and
``make bench``) compiles the modules named in ``COMPILED`` with mypyc into the folder
``_compiled/`` beside them, with ``build.json``: the digest of every engine source
it was compiled from, the interpreter it was compiled for and the digest of each
file it made. The package's ``__init__`` puts that folder first on its ``__path__``
only when all of that still holds, so an edited source is never shadowed by an old
build, nor a build half replaced or made for another Python loaded: the engine then
runs interpreted until it is compiled again. The compiled and the interpreted
engine are the same source and give the same outputs
(``tests/engine/test_native.py``); the compiled one is about one and a half times
as fast (docs/benchmarks.md (a)).

Set ``TABLE_CONTROLLER_ENGINE=interpreted`` to run the ``.py`` files whatever is
built (to debug the engine, or to compare).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, MutableSequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any, Final

COMPILED: Final = (
    "alerts",
    "betting",
    "cards",
    "console",
    "dealing",
    "devices",
    "engine",
    "rounds",
    "settlement",
    "table",
    "war",
)
"""The modules compiled: the rules' hot path. The value types (``domain``, ``inputs``,
``outputs``, ``records``) stay interpreted: mypyc does not keep the field annotations
of a NamedTuple, and the snapshot's JSON form is read from them."""

FOLDER: Final = "_compiled"
STAMP: Final = "build.json"
GROUP: Final = "compiled"
"""mypyc's shared library of the build: ``compiled__mypyc`` in the package."""
ENV: Final = "TABLE_CONTROLLER_ENGINE"
"""``interpreted``: ignore any compiled build."""
PACKAGE: Final = "table_controller.engine"
SUFFIX: Final = EXTENSION_SUFFIXES[0]
"""This interpreter's extension modules' suffix (``.cpython-311-x86_64-linux-gnu.so``)."""


def sources_digest(folder: Path) -> str:
    """The digest of every engine source in ``folder`` (names and bytes, in name order)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_files(suffix: str = SUFFIX) -> set[str]:
    """The files a build for ``suffix`` consists of: one per module, and the library."""
    return {f"{name}{suffix}" for name in (*COMPILED, f"{GROUP}__mypyc")}


def read_stamp(build: Path) -> dict[str, Any] | None:
    """The build's stamp: ``sources`` (their digest), ``suffix`` (the interpreter's it was
    built for), ``files`` (each file's digest); None when missing or not one."""
    try:
        stamp = json.loads((build / STAMP).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(stamp, dict) or not isinstance(stamp.get("files"), dict):
        return None
    return stamp


def compiled_folder(folder: Path, environ: Mapping[str, str], suffix: str = SUFFIX) -> Path | None:
    """The build to use for the engine sources in ``folder``, or None: ``environ`` asks
    for the interpreted engine, or the build is missing, partial, made for another
    interpreter (``suffix``), from other sources, or holds a file it did not make."""
    if environ.get(ENV) == "interpreted":
        return None
    build = folder / FOLDER
    stamp = read_stamp(build)
    if stamp is None or stamp.get("suffix") != suffix:
        return None
    files: dict[str, Any] = stamp["files"]
    try:
        present = {p.name for p in build.iterdir()} - {STAMP}
        if set(files) != build_files(suffix) or present != set(files):
            return None
        if any(file_digest(build / name) != digest for name, digest in files.items()):
            return None
    except OSError:
        return None
    return build if stamp.get("sources") == sources_digest(folder) else None


def use_compiled(path: MutableSequence[str]) -> None:
    """Put the engine's build first on the package's ``path``, if it is current."""
    build = compiled_folder(Path(path[0]), os.environ)
    if build is not None:
        path.insert(0, str(build))


def mode() -> str:
    """``compiled`` when every rule module loaded is the build, else ``interpreted``: for
    the service's log and the benchmarks' results."""
    loaded = [sys.modules.get(f"{PACKAGE}.{name}") for name in COMPILED]
    origins = [getattr(m, "__file__", None) or "" for m in loaded if m is not None]
    compiled = bool(origins) and all(o.endswith(SUFFIX) for o in origins)
    return "compiled" if compiled else "interpreted"


# Imported first by the package's __init__: the build goes on the path before any
# rule module is imported.
use_compiled(sys.modules[PACKAGE].__path__)
