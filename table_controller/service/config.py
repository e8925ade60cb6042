"""The table configuration (TOML, ``../shared/spec/DEVICES.md``), validated at start.

Unknown keys and bad values fail with a message naming the key. The table names
a rules profile (``[table] rules``) and may override its fields in an optional
``[profile]`` table, for example ``burn_before_dealer_war = 3``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import serial
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from drivers.sensors import parse_sensor_url
from table_controller.engine.rules import Limits, RulesName, RulesProfile, profile

TableId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
# A site and a table id are each one whole MQTT topic level: no '/', '+', '#'.
SiteId = TableId


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TableSection(_Strict):
    id: TableId
    site: SiteId
    rules: RulesName = RulesName.NY
    decks: int | None = Field(default=None, ge=1, le=8)
    positions: int = Field(default=7, ge=1, le=10)
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    limits: Limits = Limits()


class DevicesSection(_Strict):
    """Each device by URL alone (DEVICES.md): any pyserial URL for the shoe and the
    console, ``usb://VID:PID`` or ``simusb://host:port`` for the sensor board."""

    shoe: str = Field(min_length=1)
    console: str = Field(min_length=1)
    sensors: str = Field(default="usb://1209:0001", min_length=1)

    @field_validator("shoe", "console")
    @classmethod
    def _serial_url(cls, url: str) -> str:
        try:
            # Checks the URL's scheme and makes no connection.
            serial.serial_for_url(url, do_not_open=True)
        except (ValueError, serial.SerialException) as exc:
            raise ValueError(f"not a serial device or pyserial URL: {exc}") from None
        return url

    @field_validator("sensors")
    @classmethod
    def _sensor_url(cls, url: str) -> str:
        parse_sensor_url(url)
        return url


class MqttSection(_Strict):
    url: str = Field(default="mqtt://127.0.0.1:1883", pattern=r"^mqtts?://[^/]+$")
    protocol: Literal["5", "3.1.1"] = "5"
    ca_file: Path | None = None
    username: str | None = None
    password_file: Path | None = None
    topic_prefix: str = "casino/{site}/table/{table}"
    keepalive_s: int = Field(default=15, ge=5, le=600)


class StorageSection(_Strict):
    path: Path
    # Issue 11, bounded disk: sent messages and inputs before a checkpoint are
    # pruned once older than keep_days and, under "acked", acknowledged by a recorder.
    keep_days: float = Field(default=30, ge=0)
    prune: Literal["acked", "age"] = "acked"


class TableConfig(_Strict):
    table: TableSection
    devices: DevicesSection
    mqtt: MqttSection = MqttSection()
    storage: StorageSection
    profile: dict[str, Any] = Field(default_factory=dict)

    @property
    def rules(self) -> RulesProfile:
        """The named profile with this table's overrides, validated."""
        return _rules_for(self)

    @property
    def decks(self) -> int:
        return self.table.decks if self.table.decks is not None else self.rules.decks_default

    @property
    def topic_prefix(self) -> str:
        return self.mqtt.topic_prefix.format(site=self.table.site, table=self.table.id)

    @model_validator(mode="after")
    def _fits_profile(self) -> TableConfig:
        rules = _rules_for(self)
        decks = self.table.decks if self.table.decks is not None else rules.decks_default
        if not rules.decks_min <= decks <= rules.decks_max:
            raise ValueError(
                f"table.decks: {decks} decks not allowed by rules {rules.name.value!r} "
                f"({rules.decks_min}..{rules.decks_max})"
            )
        if self.table.positions > rules.positions_max:
            raise ValueError(
                f"table.positions: {self.table.positions} above the {rules.positions_max} "
                f"that rules {rules.name.value!r} allow"
            )
        prefix = self.mqtt.topic_prefix
        if "{table}" not in prefix:
            raise ValueError("mqtt.topic_prefix: must contain {table}")
        try:
            formatted = prefix.format(site=self.table.site, table=self.table.id)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"mqtt.topic_prefix: {exc}") from None
        if any(c in formatted for c in "+#") or formatted.startswith("/"):
            raise ValueError("mqtt.topic_prefix: no wildcards and no leading '/'")
        return self


def _rules_for(cfg: TableConfig) -> RulesProfile:
    base = profile(cfg.table.rules)
    if not cfg.profile:
        return base
    if "name" in cfg.profile:
        raise ValueError("profile.name: choose the rules with table.rules")
    try:
        return RulesProfile.model_validate({**base.model_dump(), **cfg.profile})
    except ValidationError as exc:
        raise ValueError(_describe(exc, prefix="profile")) from None


def _describe(exc: ValidationError, prefix: str = "") -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if p != "__root__")
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(lines)


def parse_config(data: dict[str, Any]) -> TableConfig:
    """Validate a configuration mapping; a ConfigError names every bad key."""
    try:
        return TableConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


def load_config(path: str | Path) -> TableConfig:
    """Read and validate a TOML table configuration."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from None
