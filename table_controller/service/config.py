"""The table configuration (TOML), validated at start.

Unknown keys and bad values fail with a message naming the key. The table names
a rules profile (``[table] rules``) and may override its fields in an optional
``[profile]`` table, for example ``burn_before_dealer_war = 3``.
"""

from __future__ import annotations

import string
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Literal

import serial
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from drivers.sensors import parse_sensor_url
from table_controller.engine import RulesError
from table_controller.engine.rules import (
    Limits,
    RulesName,
    RulesProfile,
    check_rule_set,
    profile,
)
from table_controller.feed.broker import (
    BrokerConfigError,
    parse_broker_url,
    password_transport_check,
    read_password,
    tls_context,
)
from table_controller.feed.tomlfile import BASE_DIR, beside_the_file, describe, read_toml
from table_controller.service.device_urls import check_serial_url

TableId = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
# A site and a table id are each one whole MQTT topic level: no '/', '+', '#'.
SiteId = TableId
DEFAULT_TOPIC_PREFIX = "casino/{site}/table/{table}"
PREFIX_FIELDS = frozenset({"site", "table"})
# The validation context key that carries the config file's folder.


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _LimitsInput(_Strict):
    """``[table] limits`` as written: each an optional pair of whole cents, minimum first."""

    initial: tuple[StrictInt, StrictInt] | None = None
    tie: tuple[StrictInt, StrictInt] | None = None


def _limits(value: object) -> Limits:
    """The engine's limits from ``[table] limits``, read strictly first: pydantic would read
    the engine's plain dataclass laxly and take `true` for 1 cent, `500.0` or `"500"` for 500."""
    if isinstance(value, Limits):
        return value
    if not isinstance(value, dict):
        raise ValueError("a table such as { initial = [500, 100000], tie = [100, 10000] }")
    given = _LimitsInput.model_validate(value)
    # The engine checks the ranges; its RulesError names the pair.
    return Limits(initial=given.initial, tie=given.tie)


class TableSection(_Strict):
    id: TableId
    site: SiteId
    rules: RulesName = RulesName.NY
    # Strict: TOML's `true` or `6.0` is not a count of decks (pydantic would make 1 and 6).
    decks: StrictInt | None = Field(default=None, ge=1, le=8)
    positions: StrictInt = Field(default=7, ge=1, le=10)
    currency: StrictStr = Field(default="USD", pattern=r"^[A-Z]{3}$")
    limits: Annotated[Limits, BeforeValidator(_limits)] = Limits()


class DevicesSection(_Strict):
    """Each device by URL alone (docs/devices.md): any pyserial URL for the shoe and the
    console, ``usb://VID:PID`` or ``simusb://host:port`` for the sensor board. A URL that
    can never be opened (``socket://host`` without a port, say) is a bad value."""

    shoe: StrictStr = Field(min_length=1)
    console: StrictStr = Field(min_length=1)
    sensors: StrictStr = Field(default="usb://1209:0001", min_length=1)

    @field_validator("shoe", "console")
    @classmethod
    def _serial_url(cls, url: str) -> str:
        try:
            # Checks the URL's scheme and makes no connection.
            serial.serial_for_url(url, do_not_open=True)
        except (ValueError, serial.SerialException) as exc:
            raise ValueError(f"not a serial device or pyserial URL: {exc}") from None
        # pyserial reads a network URL's host, port and options only when it opens it.
        check_serial_url(url)
        return url

    @field_validator("sensors")
    @classmethod
    def _sensor_url(cls, url: str) -> str:
        parse_sensor_url(url)
        return url


class MqttSection(_Strict):
    url: StrictStr = "mqtt://127.0.0.1:1883"
    protocol: Literal["5", "3.1.1"] = "5"
    ca_file: Path | None = None
    username: StrictStr | None = None
    password_file: Path | None = None
    # A password over plain mqtt:// to another machine is refused unless this says so.
    allow_plaintext_password: StrictBool = False
    topic_prefix: StrictStr = DEFAULT_TOPIC_PREFIX
    keepalive_s: StrictInt = Field(default=15, ge=5, le=600)

    @field_validator("url")
    @classmethod
    def _broker_url(cls, url: str) -> str:
        # The same parser the publisher, the pit display and the rigs use (feed/broker.py).
        try:
            parse_broker_url(url)
        except BrokerConfigError as exc:
            raise ValueError(str(exc).removeprefix("mqtt.url: ")) from None
        return url

    @field_validator("ca_file", "password_file")
    @classmethod
    def _beside_the_config(cls, path: Path | None, info: ValidationInfo) -> Path | None:
        return beside_the_file(path, info)

    @field_validator("topic_prefix")
    @classmethod
    def _prefix(cls, prefix: str) -> str:
        check_topic_prefix(prefix)
        return prefix

    @model_validator(mode="after")
    def _password_transport(self) -> MqttSection:
        password_transport_check(self.url, self.password_file, self.allow_plaintext_password)
        return self


class StorageSection(_Strict):
    path: Path
    # Issue 11, bounded disk: sent messages and inputs before a checkpoint are
    # pruned once older than keep_days and, under "acked", acknowledged by a recorder.
    # Days, whole or not; strict, so TOML's `true` is not one day nor `"30"` thirty.
    keep_days: StrictFloat = Field(default=30, ge=0)
    prune: Literal["acked", "age"] = "acked"
    # Under "acked", the recorders whose acks count; none listed: every one that ever acked.
    # Listing those that remain retires one: its last ack held back pruning for good.
    recorders: tuple[Annotated[StrictStr, Field(min_length=1)], ...] = ()

    @field_validator("path")
    @classmethod
    def _beside_the_config(cls, path: Path, info: ValidationInfo) -> Path:
        resolved = beside_the_file(path, info)
        assert resolved is not None
        return resolved


def check_topic_prefix(prefix: str) -> None:
    """Refuse a prefix that is not a plain topic path of {site} and {table} (docs/feed.md)."""
    if "\0" in prefix:
        raise ValueError("no NUL character")
    if prefix.startswith("$"):
        raise ValueError("must not start with '$' (the broker's own topics, $SYS/...)")
    try:
        parsed = list(string.Formatter().parse(prefix))
    except ValueError as exc:
        raise ValueError(f"{exc}; only {{site}} and {{table}} may be filled in") from None
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in PREFIX_FIELDS or spec or conversion:
            shown = "{" + field + (f"!{conversion}" if conversion else "")
            shown += (f":{spec}" if spec else "") + "}"
            raise ValueError(f"{shown} not allowed; only {{site}} and {{table}} may be filled in")
    if "{table}" not in prefix:
        raise ValueError("must contain {table}")
    if any(c in prefix for c in "+#"):
        raise ValueError("no wildcards ('+', '#')")
    if any(level == "" for level in prefix.split("/")):
        raise ValueError("no empty topic levels (no leading, trailing or double '/')")


class _ProfileInput(_Strict):
    """The edge's check of a profile with its overrides: types, unknown keys, ranges."""

    profile: RulesProfile


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
        return self


def _rules_for(cfg: TableConfig) -> RulesProfile:
    base = profile(cfg.table.rules)
    if not cfg.profile:
        return base
    if "name" in cfg.profile:
        raise ValueError("profile.name: choose the rules with table.rules")
    for key, value in cfg.profile.items():
        _same_kind(f"profile.{key}", getattr(base, key, None), value)
    try:
        rules = _ProfileInput.model_validate(
            {"profile": _merged(asdict(base), cfg.profile)}
        ).profile
    except ValidationError as exc:
        raise ValueError(describe(exc)) from None
    try:
        # docs/rules.md: overrides cannot leave the rule set of the profile's source.
        check_rule_set(rules)
    except RulesError as exc:
        raise ValueError(f"profile.{exc}") from None
    return rules


def _merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` laid over it, nested tables merged key by key."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def overrides_of(cfg: TableConfig) -> tuple[tuple[str, str | int | bool], ...]:
    """The ``[profile]`` overrides as (dotted key, JSON value) pairs, sorted by key."""

    def flat(prefix: str, table: dict[str, Any]) -> list[tuple[str, str | int | bool]]:
        pairs: list[tuple[str, str | int | bool]] = []
        for key, value in table.items():
            if isinstance(value, dict):
                pairs.extend(flat(f"{prefix}{key}.", value))
            else:
                pairs.append(
                    (f"{prefix}{key}", value if isinstance(value, int | bool) else str(value))
                )
        return pairs

    return tuple(sorted(flat("", cfg.profile)))


def _same_kind(key: str, default: object, value: object) -> None:
    """A number where the profile has a number, a flag where it has a flag: no coercion
    of `true` to 1 or of 6.0 to 6, which pydantic's lax mode would allow."""
    if isinstance(default, bool) and not isinstance(value, bool):
        raise ValueError(f"{key}: {value!r} is not true or false")
    whole = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, int) and not isinstance(default, bool) and not whole:
        raise ValueError(f"{key}: {value!r} is not a whole number")


def parse_config(data: dict[str, Any], *, base_dir: Path | None = None) -> TableConfig:
    """Validate a configuration mapping; a ConfigError names every bad key.

    Relative paths are taken from ``base_dir`` (the config file's folder) when given.
    """
    try:
        return TableConfig.model_validate(
            data, context={BASE_DIR: base_dir} if base_dir is not None else None
        )
    except ValidationError as exc:
        raise ConfigError(describe(exc)) from None


def check_files(cfg: TableConfig) -> None:
    """The files the config names can be used: the secret private and readable, the CA a
    CA. The service would refuse them at start; a config check should say so first."""
    try:
        if cfg.mqtt.password_file is not None:
            read_password(cfg.mqtt.password_file)
        if cfg.mqtt.ca_file is not None and parse_broker_url(cfg.mqtt.url).tls:
            tls_context(cfg.mqtt.ca_file)
    except BrokerConfigError as exc:
        raise ConfigError(str(exc)) from exc


def load_config(path: str | Path) -> TableConfig:
    """Read and validate a TOML table configuration and check the files it names."""
    p = Path(path)
    data = read_toml(p, ConfigError)
    try:
        cfg = parse_config(data, base_dir=p.absolute().parent)
        check_files(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from None
    return cfg
