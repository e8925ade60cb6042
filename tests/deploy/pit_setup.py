"""The pit broker as deployed: deploy/mosquitto's configuration and access rules,
rendered into a temporary folder (paths and port only), with certificates from
make-test-ca.sh and accounts from the provisioning scripts, run by the real
mosquitto.

mosquitto started as root drops to its own user before it reads the password,
ACL and certificate files, exactly as on the pit broker: the folders here are
given to its group the way deploy/README.md tells the operator to.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from table_controller.rigs.broker import MosquittoBroker, free_port

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
MOSQUITTO_DIR = DEPLOY / "mosquitto"
SHIPPED_CONF = MOSQUITTO_DIR / "pit-broker.conf"
SCRIPT_TIMEOUT_S = 60.0
BROKER_USER = "mosquitto"

# Every absolute path in pit-broker.conf, by role; the renderer refuses any
# other, so a path added to the shipped file must be added here too.
PRODUCTION_PATHS = {
    "certfile": "/etc/mosquitto/certs/pit-broker.pem",
    "keyfile": "/etc/mosquitto/certs/pit-broker.key",
    "password_file": "/etc/mosquitto/pit-broker.passwd",
    "acl_file": "/etc/mosquitto/pit-broker.acl",
    "persistence_location": "/var/lib/mosquitto/",
    "log_file": "/var/log/mosquitto/mosquitto.log",
}
PRODUCTION_LISTENER = "listener 8883"


class ScriptError(AssertionError):
    """A deploy script failed; the message carries its output."""


def run_script(
    name: str, *args: str, env: Mapping[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run one of deploy/mosquitto's scripts with bash, as an operator would."""
    proc = subprocess.run(
        ["bash", str(MOSQUITTO_DIR / name), *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if check and proc.returncode != 0:
        raise ScriptError(f"{name} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def _running_as_root() -> bool:
    return os.geteuid() == 0


def give_to_broker(path: Path, mode: int, *, own: bool = False) -> None:
    """Let the broker's user read (or, with own, write) path, as on the pit broker."""
    os.chmod(path, mode)
    if _running_as_root():
        uid = pwd.getpwnam(BROKER_USER).pw_uid if own else -1
        os.chown(path, uid, grp.getgrnam(BROKER_USER).gr_gid)


@dataclass(frozen=True, slots=True)
class PitCa:
    dir: Path

    @property
    def ca_file(self) -> Path:
        return self.dir / "ca.pem"

    def cert(self, name: str) -> tuple[Path, Path]:
        return self.dir / f"{name}.pem", self.dir / f"{name}.key"


@dataclass(frozen=True, slots=True)
class BrokerFiles:
    certfile: Path
    keyfile: Path
    password_file: Path
    acl_file: Path
    persistence_location: Path
    log_file: Path

    @property
    def script_env(self) -> dict[str, str]:
        """Point the provisioning scripts at these files."""
        return {"PIT_BROKER_PASSWD": str(self.password_file), "PIT_BROKER_ACL": str(self.acl_file)}


def render_pit_broker_conf(port: int, files: BrokerFiles) -> str:
    """The shipped pit-broker.conf with its paths and port moved, nothing else changed."""
    source = SHIPPED_CONF.read_text(encoding="utf-8")
    replacements = {
        PRODUCTION_PATHS["certfile"]: str(files.certfile),
        PRODUCTION_PATHS["keyfile"]: str(files.keyfile),
        PRODUCTION_PATHS["password_file"]: str(files.password_file),
        PRODUCTION_PATHS["acl_file"]: str(files.acl_file),
        PRODUCTION_PATHS["persistence_location"]: f"{files.persistence_location}/",
        PRODUCTION_PATHS["log_file"]: str(files.log_file),
    }
    listeners = 0
    out: list[str] = []
    for line in source.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            out.append(line)
            continue
        if words[0] == "listener":
            assert line.strip() == PRODUCTION_LISTENER, f"unexpected listener line: {line!r}"
            listeners += 1
            out.append(f"listener {port} 127.0.0.1")
            continue
        rendered = []
        for word in words:
            if word.startswith("/"):
                assert word in replacements, (
                    f"pit-broker.conf names a path the test cannot move: {word}"
                )
                word = replacements[word]
            rendered.append(word)
        out.append(" ".join(rendered))
    assert listeners == 1, "pit-broker.conf must have exactly one listener"
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True)
class Account:
    username: str
    secret_file: Path

    @property
    def password(self) -> str:
        return self.secret_file.read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class PitBroker:
    """A running broker from the shipped configuration, with its accounts."""

    broker: MosquittoBroker
    ca: PitCa
    files: BrokerFiles
    accounts: dict[str, Account] = field(default_factory=dict)
    host: str = "127.0.0.1"

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def url(self) -> str:
        return f"mqtts://{self.host}:{self.port}"

    def log(self) -> str:
        try:
            return self.files.log_file.read_text(errors="replace")
        except OSError:
            return ""


TABLES = {"war-07": "main-floor", "war-08": "main-floor", "war-09": "east-wing"}
# The client id is the username (use_username_as_clientid): a client connected at the
# same time as another of the same account needs an account of its own.
PIT_DISPLAYS = {"pit-1": "main-floor", "pit-2": "main-floor", "pit-e": "east-wing"}
RECORDERS = {"rec-1": "main-floor"}


def topic(table: str, leaf: str = "status", *, site: str | None = None) -> str:
    """A topic under a table's prefix (docs/feed.md: casino/{site}/table/{table})."""
    return f"casino/{site or TABLES[table]}/table/{table}/{leaf}"


@contextmanager
def pit_broker(
    ca: PitCa,
    *,
    tables: Mapping[str, str] = TABLES,
    pit_displays: Mapping[str, str] = PIT_DISPLAYS,
    recorders: Mapping[str, str] = RECORDERS,
    bridges: Mapping[str, str] | None = None,
    bridged_in: Mapping[str, str] | None = None,
    extra_conf: str = "",
    cert: str = "server",
) -> Iterator[PitBroker]:
    """Provision the accounts with the scripts, render the config, run mosquitto.

    ``bridged_in``: on a site broker, the bridges (by remote_username) whose messages
    coming down are held to their site-side rules (``provision-bridge.sh --site-side``)."""
    root = Path(tempfile.mkdtemp(prefix="pit-broker-"))
    try:
        give_to_broker(root, 0o750)
        etc, data, log, secrets = (root / n for n in ("etc", "data", "log", "secrets"))
        etc.mkdir()
        give_to_broker(etc, 0o750)
        data.mkdir()
        give_to_broker(data, 0o750, own=True)
        log.mkdir()
        give_to_broker(log, 0o750, own=True)
        secrets.mkdir(mode=0o700)
        certfile, keyfile = ca.cert(cert)
        files = BrokerFiles(
            certfile=certfile,
            keyfile=keyfile,
            password_file=etc / "pit-broker.passwd",
            acl_file=etc / "pit-broker.acl",
            persistence_location=data,
            log_file=log / "mosquitto.log",
        )
        accounts: dict[str, Account] = {}
        for table_id, site in tables.items():
            secret = secrets / f"{table_id}.secret"
            run_script("provision-table.sh", site, table_id, str(secret), env=files.script_env)
            accounts[table_id] = Account(table_id, secret)
        for script, names in (
            ("provision-pit.sh", pit_displays),
            ("provision-recorder.sh", recorders),
            ("provision-bridge.sh", bridges or {}),
        ):
            for name, site in names.items():
                secret = secrets / f"{name}.secret"
                run_script(script, site, name, str(secret), env=files.script_env)
                accounts[name] = Account(name, secret)
        for name, site in (bridged_in or {}).items():
            run_script("provision-bridge.sh", "--site-side", site, name, env=files.script_env)
        port = free_port()
        broker = MosquittoBroker(port, config_text=render_pit_broker_conf(port, files) + extra_conf)
        setup = PitBroker(broker=broker, ca=ca, files=files, accounts=accounts)
        try:
            broker.start()
            yield setup
        finally:
            broker.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
