"""``rig.toml``: the bench that ``scenario run --external`` plays on (``docs/hil.md``).

Validated as every config is: an unknown key, a missing one or a bad value is
named with its file and key.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from table_controller.feed.broker import (
    BrokerConfigError,
    check_password_transport,
    parse_broker_url,
    read_password,
    tls_context,
)
from table_controller.feed.tomlfile import BASE_DIR, beside_the_file
from table_controller.rigs.errors import RigConfigError
from table_controller.rigs.observer import BrokerLogin
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
    username: str | None = Field(default=None, min_length=1)
    """The rig's account on a deployed broker (a pit display's will do: it reads)."""
    password_file: Path | None = None
    """Its secret, private to the user running the rig (as a table's)."""
    ca_file: Path | None = None
    """The CA of an ``mqtts://`` broker (default: the system's)."""

    @field_validator("password_file", "ca_file")
    @classmethod
    def _beside_the_rig_file(cls, path: Path | None, info: ValidationInfo) -> Path | None:
        return beside_the_file(path, info)

    @model_validator(mode="after")
    def _login(self) -> RigSection:
        address = parse_broker_url(self.broker)
        if self.password_file is not None:
            if self.username is None:
                raise ValueError("password_file needs username")
            try:
                check_password_transport(
                    address,
                    allow_plaintext=False,
                    key="rig.broker",
                    fix="use mqtts:// (with rig.ca_file)",
                )
            except BrokerConfigError as exc:
                raise ValueError(str(exc)) from None
        if self.ca_file is not None and not address.tls:
            raise ValueError("ca_file needs an mqtts:// broker")
        return self

    def login(self) -> BrokerLogin:
        """The account, its password and TLS, read now; RigConfigError names the key."""
        try:
            password = None
            if self.password_file is not None:
                password = read_password(self.password_file, key="rig.password_file")
            tls = None
            if parse_broker_url(self.broker).tls:
                tls = tls_context(self.ca_file, key="rig.ca_file")
        except BrokerConfigError as exc:
            raise RigConfigError(str(exc)) from None
        return BrokerLogin(self.username, password, tls)

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


def parse_rig(
    data: dict[str, object], *, where: str = "rig.toml", base_dir: Path | None = None
) -> RigSection:
    """Validate a rig file's mapping; a RigConfigError names every bad key. Relative paths
    are taken from ``base_dir`` (the rig file's folder) when given."""
    try:
        context = {BASE_DIR: base_dir} if base_dir is not None else None
        return RigFile.model_validate(data, context=context).rig
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
    rig = parse_rig(data, where=str(p), base_dir=p.absolute().parent)
    try:
        rig.login()  # the secret and the CA, checked before anything is opened
    except RigConfigError as exc:
        raise RigConfigError(f"{p}: {exc}") from None
    return rig
