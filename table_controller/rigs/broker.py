"""A Mosquitto broker process on loopback, for tests, benchmarks, rigs and the demo,
and the TCP gate that takes it away from a client.

It is the real Debian ``mosquitto`` binary, started with a generated config on a
free port (or a given one, so that a test can stop it and start it again on the
same address).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from table_controller.feed.broker import parse_broker_url
from table_controller.rigs.errors import BrokerError

# Where the broker's own error lives for those who start one.
__all__ = ["BrokerError", "BrokerGate", "MosquittoBroker", "find_mosquitto", "free_port"]

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
                # Every broker the project starts sends at once (deploy/README.md: Nagle's
                # delay would sit on every card's path).
                "set_tcp_nodelay true\n"
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


class BrokerGate:
    """A TCP forwarder between a client and the broker, to take the broker away.

    ``close()`` drops every connection through it (a reset, no MQTT DISCONNECT:
    to the broker the client died) and refuses new ones, which the client sees
    exactly as a broker gone away; ``open()`` lets it connect again, on the same
    port. ``cut()`` drops the connections but goes on listening, as a network
    blip. A rig's observer talks to the broker directly, so it misses nothing
    the client publishes when it is back.
    """

    def __init__(self, broker_url: str) -> None:
        address = parse_broker_url(broker_url)
        self.target = (address.host, address.port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    async def open(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    def cut(self) -> None:
        """Drop every connection through the gate; new ones are let through."""
        for writer in list(self._writers):
            writer.transport.abort()

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        self.cut()
        if self._pumps:
            await asyncio.gather(*self._pumps, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            self._writers.discard(writer)
            writer.transport.abort()
            return
        self._writers.add(up_writer)
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer), name="broker-gate-up"),
            asyncio.create_task(self._pump(up_reader, writer), name="broker-gate-down"),
        ]
        self._pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in (writer, up_writer):
                w.transport.abort()
                self._writers.discard(w)
            await asyncio.gather(*pumps, return_exceptions=True)
            self._pumps.difference_update(pumps)

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
