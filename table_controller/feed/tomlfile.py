"""The TOML files the system's processes are configured by (table, recorder): one way to
read one, and one way to name the key of every value that does not validate."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError, ValidationInfo

from table_controller.engine.errors import RulesError

E = TypeVar("E", bound=Exception)

# The validation context key of the config file's folder (``model_validate(context=…)``).
BASE_DIR = "base_dir"


def beside_the_file(path: Path | None, info: ValidationInfo) -> Path | None:
    """A relative path is taken from the config file's folder (``BASE_DIR`` in the
    validation context), not the working directory: under systemd that is /."""
    base = info.context.get(BASE_DIR) if isinstance(info.context, dict) else None
    if path is None or path.is_absolute() or base is None:
        return path
    return Path(base) / path


class SectionKeyError(ValueError):
    """A check across a section's keys that names the one key it faults (``describe``
    puts it after the section's dotted path)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


def read_toml(path: Path, error: type[E]) -> dict[str, Any]:
    """The file's tables; ``error`` naming the file when it cannot be read or parsed."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from exc


def describe(exc: ValidationError) -> str:
    """Every problem as ``dotted.key: what is wrong``, joined by ``; ``."""
    lines = []
    for err in exc.errors():
        parts = [str(p) for p in err["loc"] if p != "__root__"]
        cause = err.get("ctx", {}).get("error")
        msg = err["msg"].removeprefix("Value error, ")
        if isinstance(cause, RulesError | SectionKeyError):
            # The engine's own range check names the field inside the model.
            parts.append(cause.key)
            msg = cause.message
        loc = ".".join(parts)
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(lines)
