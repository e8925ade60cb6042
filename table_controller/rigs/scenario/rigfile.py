"""``rig.toml``: the bench that ``scenario run --external`` plays on (``docs/hil.md``).

Validated as every config is: an unknown key, a missing one or a bad value is
named with its file and key.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from table_controller.feed.broker import parse_broker_url
from table_controller.rigs.errors import RigConfigError
from table_controller.service.config import DevicesSection

_IDENT = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RigSection(_Strict):
    """``[rig]``: where the table under test publishes, and the rig's ends of its lines."""

    broker: str
    """``mqtt://HOST[:PORT]``: the broker the table under test publishes to."""
    site: str = Field(pattern=_IDENT)
    table: str = Field(pattern=_IDENT)
    shoe: str = Field(min_length=1)
    """The rig's end of the shoe's line: any pyserial URL or device path."""
    console: str = Field(min_length=1)
    sensors: str
    """``HOST:PORT`` where the rig serves the simulated board (``simusb://`` in the
    table's config names this address)."""
    restart_command: str | None = Field(default=None, min_length=1)
    """Stops the controller cleanly and starts it again (``restart: controller``)."""
    kill_command: str | None = Field(default=None, min_length=1)
    """Kills the controller; its supervisor (systemd) starts it again (``kill: controller``)."""
    timeout_scale: float = Field(default=1.0, gt=0, le=100)
    """Every timeout of the scenarios times this, for slow hardware."""

    @field_validator("broker")
    @classmethod
    def _broker_url(cls, url: str) -> str:
        parse_broker_url(url)
        return url

    @field_validator("shoe", "console")
    @classmethod
    def _serial_url(cls, url: str) -> str:
        # The table config's own check of a device URL (it makes no connection).
        try:
            DevicesSection(shoe=url, console=url)
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
        return url

    @field_validator("sensors")
    @classmethod
    def _address(cls, text: str) -> str:
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdecimal() or not 0 < int(port) < 65536:
            raise ValueError(f"HOST:PORT such as 0.0.0.0:7003, not {text!r}")
        return text

    @property
    def sensors_host(self) -> str:
        return self.sensors.rpartition(":")[0]

    @property
    def sensors_port(self) -> int:
        return int(self.sensors.rpartition(":")[2])

    @property
    def prefix(self) -> str:
        return f"casino/{self.site}/table/{self.table}"


class RigFile(_Strict):
    rig: RigSection


def parse_rig(data: dict[str, object], *, where: str = "rig.toml") -> RigSection:
    """Validate a rig file's mapping; a RigConfigError names every bad key."""
    try:
        return RigFile.model_validate(data).rig
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            problems.append(f"{key}: {msg}" if key else msg)
        raise RigConfigError(f"{where}: " + "; ".join(problems)) from None


def load_rig(path: str | Path) -> RigSection:
    """Read and validate a ``rig.toml``."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RigConfigError(f"{p}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RigConfigError(f"{p}: not valid TOML: {exc}") from None
    return parse_rig(data, where=str(p))
