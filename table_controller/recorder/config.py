"""The recorder's configuration (TOML, ``docs/recorder.md``), validated at start.

Unknown keys and bad values fail with a message naming the key::

    [mqtt]
    url = "mqtts://broker.pit:8883"
    username = "recorder-1"            # also the client id and the recorder's name
    password_file = "/etc/table-controller/recorder.password"
    ca_file = "/etc/table-controller/ca.pem"
    group = "recorders"                 # the shared subscription's group
    sites = ["main-floor"]

    [database]
    url = "postgresql://recorder@db.pit/casino"   # or "sqlite:///var/lib/recorder.db"
    retention_years = 5                 # records purge keeps at least this much

    [http]                              # no listen: no HTTP at all
    listen = "127.0.0.1:8080"
    users_file = "/var/lib/casino-recorder/pit-users"   # table-controller users add
    # cert_file = "/etc/table-controller/pit.pem"       # both, for HTTPS
    # key_file = "/etc/table-controller/pit.key"
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from table_controller.feed.broker import (
    BrokerConfigError,
    parse_broker_url,
    password_transport_check,
    read_password,
    tls_context,
)
from table_controller.feed.tomlfile import (
    BASE_DIR,
    SectionKeyError,
    beside_the_file,
    describe,
    read_toml,
)
from table_controller.recorder.errors import RecorderConfigError

# One whole MQTT topic level: no '/', '+', '#' (docs/feed.md: site and table are levels).
Level = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
# Long enough for a restart; not so long that a recorder that never returns keeps
# receiving its share of the group's messages for hours (the tables' replay covers
# that share, but each message then waits for its gap to be noticed).
DEFAULT_SESSION_EXPIRY_S: Final = 300
# LAC 42:III.2717 and others: source records kept five years.
RETENTION_YEARS: Final = 5


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MqttSection(_Strict):
    url: str = "mqtt://127.0.0.1:1883"
    username: Level | None = None
    password_file: Path | None = None
    ca_file: Path | None = None
    # A password over plain mqtt:// to another machine is refused unless this says so.
    allow_plaintext_password: StrictBool = False
    # The client id where the broker has no accounts (tests, the demo); with a
    # username the broker uses that (use_username_as_clientid) and so do we.
    client_id: Level | None = None
    group: Level = "recorders"
    sites: Annotated[list[Level], Field(min_length=1)]
    session_expiry_s: Annotated[int, Field(ge=0, le=2**32 - 1)] = DEFAULT_SESSION_EXPIRY_S
    # docs/feed.md: 5 in production; 3.1.1 only for a broker without 5 (the demo's amqtt),
    # with no shared subscription (one recorder alone) and a WARNING at start.
    protocol: Literal["5", "3.1.1"] = "5"

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            parse_broker_url(value)
        except BrokerConfigError as exc:
            raise ValueError(str(exc).removeprefix("mqtt.url: ")) from exc
        return value

    @field_validator("password_file", "ca_file")
    @classmethod
    def _files(cls, path: Path | None, info: ValidationInfo) -> Path | None:
        return beside_the_file(path, info)

    @model_validator(mode="after")
    def _password_transport(self) -> MqttSection:
        password_transport_check(self.url, self.password_file, self.allow_plaintext_password)
        return self

    @property
    def name(self) -> str:
        """The recorder's name: its client id, which the broker knows it by."""
        return self.username or self.client_id or "recorder"


class DatabaseSection(_Strict):
    url: str = "sqlite:///recorder.db"
    # docs/recorder.md: hand records are kept for years (default 5); `records purge` removes
    # only what is older than this.
    retention_years: int = Field(default=RETENTION_YEARS, ge=1, le=100)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value.startswith(("postgresql://", "postgres://")):
            return value
        if value.startswith("sqlite:///") and len(value) > len("sqlite:///"):
            return value
        raise ValueError('use "postgresql://user@host/db" or "sqlite:///path/to/file.db"')


class HttpSection(_Strict):
    """The pit display and the JSON API (docs/web.md): served only when ``listen`` is set,
    and then only behind the pit users' logins (``users_file``), over HTTPS with both
    ``cert_file`` and ``key_file``."""

    listen: str | None = None
    users_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    @field_validator("users_file", "cert_file", "key_file")
    @classmethod
    def _files(cls, path: Path | None, info: ValidationInfo) -> Path | None:
        return beside_the_file(path, info)

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parse_listen(value)
        return value

    @model_validator(mode="after")
    def _logins(self) -> HttpSection:
        if self.listen is not None and self.users_file is None:
            raise SectionKeyError(
                "users_file",
                "required with listen: every page and API route needs a pit user's login "
                "(table-controller users add NAME --file FILE)",
            )
        if (self.cert_file is None) != (self.key_file is None):
            missing = "key_file" if self.key_file is None else "cert_file"
            raise SectionKeyError(missing, "give both cert_file and key_file for HTTPS, or neither")
        return self


class RecorderConfig(_Strict):
    mqtt: MqttSection
    database: DatabaseSection = DatabaseSection()
    http: HttpSection = HttpSection()


def parse_listen(value: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8080`` for IPv6) as a host and a port (0 picks a free one)."""
    host, sep, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{value!r}: use host:port, for example 127.0.0.1:8080")
    return host, int(port)


def parse_config(data: dict[str, Any], *, base_dir: Path | None = None) -> RecorderConfig:
    """Validate a configuration mapping; the error names every bad key. Relative paths are
    taken from ``base_dir`` (the config file's folder) when given."""
    try:
        return RecorderConfig.model_validate(
            data, context={BASE_DIR: base_dir} if base_dir is not None else None
        )
    except ValidationError as exc:
        raise RecorderConfigError(describe(exc)) from exc


def check_files(cfg: RecorderConfig) -> None:
    """The broker's secret private and readable, its CA a CA: said at once, naming the
    key, before the database is opened (the recorder would refuse them only then)."""
    try:
        if cfg.mqtt.password_file is not None:
            read_password(cfg.mqtt.password_file)
        if cfg.mqtt.ca_file is not None or parse_broker_url(cfg.mqtt.url).tls:
            tls_context(cfg.mqtt.ca_file)
    except BrokerConfigError as exc:
        raise RecorderConfigError(str(exc)) from None


def load_config(path: str | Path, *, broker_files: bool = True) -> RecorderConfig:
    """Read and validate a TOML recorder configuration and check the files it names;
    ``broker_files`` False for a command that opens the database alone (``records``),
    which anyone allowed the database may run, without the broker's secret."""
    p = Path(path)
    data = read_toml(p, RecorderConfigError)
    try:
        cfg = parse_config(data, base_dir=p.absolute().parent)
        if broker_files:
            check_files(cfg)
    except RecorderConfigError as exc:
        raise RecorderConfigError(f"{p}: {exc}") from exc
    return cfg
