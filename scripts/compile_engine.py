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
import importlib.util
import json
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
    GROUP,
    PACKAGE,
    STAMP,
    SUFFIX,
    build_files,
    compiled_folder,
    file_digest,
    read_stamp,
    sources_digest,
)

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "table_controller" / "engine"

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


def builder_digest() -> str:
    """This script's digest: a build made by another version of it is made again."""
    return file_digest(Path(__file__))


def missing_tools() -> str | None:
    """Why no C extension can be built here, or None."""
    for module in ("mypyc", "setuptools"):
        if importlib.util.find_spec(module) is None:
            return f"no {module} in this Python (pip install -e '.[test]')"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not include.exists():
        return f"no Python headers ({include}; Debian: apt-get install python3-dev)"
    return None


def build(into: Path) -> None:
    """Compile ``COMPILED`` into ``into``, with its stamp; the old build is replaced whole
    (a build half replaced is never loaded either: its files no longer match the stamp)."""
    digest = sources_digest(ENGINE)
    sources = [str(ENGINE / f"{name}.py") for name in COMPILED]
    staging = into.with_name(into.name + ".new")
    with tempfile.TemporaryDirectory(prefix="engine-build-") as tmp:
        work = Path(tmp)
        (work / "setup.py").write_text(SETUP.format(group=f"{PACKAGE}.{GROUP}"), "utf-8")
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
        out = work / "lib" / Path(*PACKAGE.split("."))
        built = {path.name for path in out.glob(f"*{SUFFIX}")}
        if built != build_files():
            raise SystemExit(f"compile_engine: mypyc built {sorted(built)}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for name in built:
            shutil.copy2(out / name, staging / name)
    if sources_digest(ENGINE) != digest:
        shutil.rmtree(staging)
        raise SystemExit("compile_engine: the sources changed during the build; run it again")
    stamp = {
        "sources": digest,
        "suffix": SUFFIX,
        "files": {name: file_digest(staging / name) for name in sorted(built)},
        "builder": builder_digest(),
    }
    (staging / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    old = into.with_name(into.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if into.exists():
        into.rename(old)
    staging.rename(into)
    shutil.rmtree(old, ignore_errors=True)


def current(into: Path) -> bool:
    """The build in ``into`` is loaded as it is, and this script made it."""
    stamp = read_stamp(into)
    return (
        compiled_folder(ENGINE, {}) is not None
        and stamp is not None
        and stamp.get("builder") == builder_digest()
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build even when current")
    args = parser.parse_args(argv)
    into = ENGINE / FOLDER
    if not args.force and current(into):
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
