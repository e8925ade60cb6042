"""The rule modules compiled to C by mypyc, used only while they match the sources.

``make engine`` (``scripts/compile_engine.py``, run by ``make test``, ``make demo`` and
``make bench``) compiles the modules named in ``COMPILED`` with mypyc into the folder
``_compiled/`` beside them, with ``sources.sha256``: the digest of every engine
source it was compiled from. The package's ``__init__`` puts that folder first on
its ``__path__`` only when the digest still matches the ``.py`` files here, so an
edited source is never shadowed by an old build: the engine runs interpreted until
it is compiled again. The compiled and the interpreted engine are the same source
and give the same outputs (``tests/engine/test_native.py``); the compiled one is
about twice as fast (docs/benchmarks.md (a)).

Set ``TABLE_CONTROLLER_ENGINE=interpreted`` to run the ``.py`` files whatever is
built (to debug the engine, or to compare).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping, MutableSequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Final

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
STAMP: Final = "sources.sha256"
ENV: Final = "TABLE_CONTROLLER_ENGINE"
"""``interpreted``: ignore any compiled build."""
PACKAGE: Final = "table_controller.engine"


def sources_digest(folder: Path) -> str:
    """The digest of every engine source in ``folder`` (names and bytes, in name order)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def compiled_folder(folder: Path, environ: Mapping[str, str]) -> Path | None:
    """The build to use for the engine sources in ``folder``, or None: none is built,
    it was built from other sources, or ``environ`` asks for the interpreted engine."""
    if environ.get(ENV) == "interpreted":
        return None
    build = folder / FOLDER
    try:
        stamp = (build / STAMP).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return build if stamp == sources_digest(folder) else None


def use_compiled(path: MutableSequence[str]) -> None:
    """Put the engine's build first on the package's ``path``, if it is current."""
    build = compiled_folder(Path(path[0]), os.environ)
    if build is not None:
        path.insert(0, str(build))


def mode() -> str:
    """``compiled`` when the engine running is the build, else ``interpreted``: for the
    service's log and the benchmarks' results."""
    module = sys.modules.get(f"{PACKAGE}.engine")
    origin = getattr(module, "__file__", None) or ""
    return "compiled" if origin.endswith(tuple(EXTENSION_SUFFIXES)) else "interpreted"


# Imported first by the package's __init__: the build goes on the path before any
# rule module is imported.
use_compiled(sys.modules[PACKAGE].__path__)
