"""A Mosquitto broker process on loopback, for tests, benchmarks, rigs and the demo.

It is the real Debian ``mosquitto`` binary, started with a generated config on a
free port (or a given one, so that a test can stop it and start it again on the
same address).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

_SEARCH = ("/usr/sbin", "/usr/local/sbin", "/usr/bin")
START_TIMEOUT_S = 10.0


def find_mosquitto() -> str | None:
    """The mosquitto binary on PATH or in the usual sbin folders, or None."""
    found = shutil.which("mosquitto")
    if found:
        return found
    for folder in _SEARCH:
        candidate = Path(folder) / "mosquitto"
        if candidate.is_file():
            return str(candidate)
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class BrokerError(RuntimeError):
    """The broker could not be started."""


class MosquittoBroker:
    """One mosquitto process. ``start()``/``stop()`` may be repeated on the same port."""

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        extra_config: str = "",
        config_text: str | None = None,
        workdir: Path | None = None,
    ) -> None:
        binary = find_mosquitto()
        if binary is None:
            raise BrokerError("mosquitto not found: install the Debian package 'mosquitto'")
        self.binary = binary
        self.host = host
        self.port = port if port is not None else free_port(host)
        self._own_dir = workdir is None
        self._tmp = tempfile.TemporaryDirectory(prefix="mosquitto-") if workdir is None else None
        self.workdir = Path(self._tmp.name) if self._tmp is not None else Path(workdir or ".")
        self.config_path = self.workdir / "mosquitto.conf"
        self.log_path = self.workdir / "mosquitto.log"
        if config_text is None:
            config_text = (
                f"listener {self.port} {self.host}\n"
                "allow_anonymous true\n"
                "persistence false\n"
                "max_queued_messages 100000\n"
                "max_inflight_messages 0\n"
                f"{extra_config}\n"
            )
        self.config_path.write_text(config_text, encoding="utf-8")
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        if self.running:
            return
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [self.binary, "-c", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C at the terminal goes to the program that
                # owns the broker, which stops it once its clients have said goodbye.
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerError(f"mosquitto exited at start: {self.log_tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                # Polling a port for a child process to listen: there is no event to wait on.
                time.sleep(0.02)
        self.stop()
        raise BrokerError(f"mosquitto did not listen on {self.port}: {self.log_tail()}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> MosquittoBroker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
