"""A PostgreSQL server in a temporary folder, for the recorder's tests and benchmark.

Debian's ``postgresql`` binaries (``initdb``, ``pg_ctl``) on a free loopback
port, the unix socket in the same folder, trust authentication for one user.
PostgreSQL refuses to run as root: as root, the folder is given to a system
user (``postgres``, created if missing) and the binaries run as that user.
``stop()`` and ``start()`` may be repeated on the same port and data.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Final

BIN: Final = Path("/usr/lib/postgresql/15/bin")
USER: Final = "recorder"
SYSTEM_USER: Final = "postgres"
START_TIMEOUT_S: Final = 60


class PostgresError(RuntimeError):
    """The server could not be set up or started."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _system_user() -> str | None:
    """The user to run PostgreSQL as: none needed unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
            check=True,
        )
    return SYSTEM_USER


class PostgresServer:
    def __init__(self) -> None:
        if not (BIN / "initdb").exists():
            raise PostgresError(f"{BIN}/initdb not found: install the Debian package 'postgresql'")
        self._tmp = tempfile.TemporaryDirectory(prefix="recorder-pg-")
        self.dir = Path(self._tmp.name)
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self._user = _system_user()
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync"
        )
        self._initialised = True
        self._databases = 0
        # Chosen after initdb (seconds), just before the usual start(): a port found free
        # is free only until some other server binds it.
        self.port = _free_port()

    def _run(self, tool: str, *args: str) -> None:
        result = subprocess.run(
            [str(BIN / tool), *args],
            user=self._user,
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
        )
        if result.returncode != 0:
            raise PostgresError(f"{tool} failed: {result.stderr.strip() or result.stdout.strip()}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def create_database(self) -> str:
        """A new empty database; its URL."""
        self._databases += 1
        name = f"test_{self._databases}"
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, name)
        return self.url(name)

    def close(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            self._tmp.cleanup()

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
