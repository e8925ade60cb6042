"""A table runner on a journal, fed a seeded session of engine inputs (no devices)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from table_controller.engine import Input
from table_controller.engine.rules import RulesName, profile
from table_controller.service.config import TableConfig, parse_config
from tests.engine.helpers import random_session


def config(path: Path, **table: Any) -> TableConfig:
    return parse_config(
        {
            "table": {"id": "war-07", "site": "main-floor", "rules": "ny", **table},
            "devices": {"shoe": "socket://127.0.0.1:9", "console": "socket://127.0.0.1:9"},
            "storage": {"path": str(path)},
        }
    )


def session(rounds: int, seed: int = 7, positions: int = 7) -> list[Input]:
    """The inputs of ``rounds`` seeded rounds (shoes, dealers, misreads, voids…)."""
    return random_session(profile(RulesName.NY), seed, rounds, positions=positions).inputs


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for chunk in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    return filler
