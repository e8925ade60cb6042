"""Compile the engine's rule modules with mypyc into ``table_controller/engine/_compiled/``.

``make engine`` runs this, and ``make test``, ``make demo`` and ``make bench`` run
``make engine``. It does nothing when the build matches the sources. Without a C
compiler or Python's headers it says so and leaves the engine interpreted: every
part of the project works either way, only slower (table_controller/engine/native.py).
A build that fails with the tools present is an error: the engine must stay
compilable.

    python scripts/compile_engine.py [--force]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

from table_controller.engine.native import (
    COMPILED,
    FOLDER,
    STAMP,
    compiled_folder,
    sources_digest,
)

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "table_controller" / "engine"
GROUP = "table_controller.engine.compiled"
"""mypyc's shared library of the group: ``compiled__mypyc`` in the package."""

SETUP = """\
import sys
from mypyc.build import mypycify
from setuptools import setup

setup(
    name="table-controller-engine",
    ext_modules=mypycify(sys.argv[1:], group_name={group!r}, opt_level="3"),
    script_args=["build_ext", "--build-lib", "lib", "--build-temp", "temp"],
)
"""


def missing_tools() -> str | None:
    """Why no C extension can be built here, or None."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not include.exists():
        return f"no Python headers ({include}; Debian: apt-get install python3-dev)"
    return None


def build(into: Path) -> None:
    """Compile ``COMPILED`` and put the extension modules, and the stamp, in ``into``."""
    digest = sources_digest(ENGINE)
    sources = [str(ENGINE / f"{name}.py") for name in COMPILED]
    with tempfile.TemporaryDirectory(prefix="engine-build-") as tmp:
        work = Path(tmp)
        (work / "setup.py").write_text(SETUP.format(group=GROUP), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "setup.py", *sources],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
            raise SystemExit(f"compile_engine: mypyc failed (exit {done.returncode})")
        built = sorted((work / "lib" / "table_controller" / "engine").glob("*.so"))
        if len(built) != len(COMPILED) + 1:
            raise SystemExit(f"compile_engine: mypyc built {[p.name for p in built]}")
        staging = into.with_name(into.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for path in built:
            shutil.copy2(path, staging / path.name)
    if sources_digest(ENGINE) != digest:
        shutil.rmtree(staging)
        raise SystemExit("compile_engine: the sources changed during the build; run it again")
    (staging / STAMP).write_text(digest + "\n", encoding="ascii")
    shutil.rmtree(into, ignore_errors=True)
    staging.rename(into)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build even when current")
    args = parser.parse_args(argv)
    into = ENGINE / FOLDER
    if not args.force and compiled_folder(ENGINE, {}) is not None:
        print("engine: compiled build is current")
        return 0
    why = missing_tools()
    if why is not None:
        print(f"engine: runs interpreted (slower): {why}")
        return 0
    build(into)
    print(f"engine: compiled {len(COMPILED)} modules into {into.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
