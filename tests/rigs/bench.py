"""A bench without the bench: null-modem cables from socat pty pairs, and a table PC's
controller as its own ``table-controller run`` process, under a supervisor that
starts it again when it stops (as systemd does), with the commands to restart or
kill it."""

from __future__ import annotations

import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from table_controller.rigs.rig import TableSpec, config_toml

SOCAT_START_S = 10.0
_PTY = re.compile(rb"PTY is (\S+)")


class NullModem:
    """A null-modem cable: ``table_end`` for the table PC, ``rig_end`` for the rig."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            ["socat", "-d", "-d", "pty,raw,echo=0", "pty,raw,echo=0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert self._proc.stderr is not None
        ends: list[str] = []
        seen = b""
        deadline = time.monotonic() + SOCAT_START_S
        # socat names the two ptys on its stderr as it opens them.
        while len(ends) < 2:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._proc.stderr], [], [], max(left, 0))
            if not ready:
                self.close()
                raise RuntimeError(f"socat named no ptys: {seen!r}")
            # Unbuffered: a buffered readline would hide the next line from select().
            chunk = os.read(self._proc.stderr.fileno(), 4096)
            if not chunk:
                self.close()
                raise RuntimeError(f"socat exited: {seen!r}")
            seen += chunk
            ends = [m.decode() for m in _PTY.findall(seen)]
        self.table_end, self.rig_end = ends

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
        if self._proc.stderr is not None:
            self._proc.stderr.close()

    def __enter__(self) -> NullModem:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class TablePC:
    """``table-controller run`` on the table ends of the cables, kept running by a loop
    that starts it again whenever it ends (the restart and kill commands rely on it)."""

    def __init__(
        self, workdir: Path, spec: TableSpec, *, shoe: str, console: str, sensors: str, broker: str
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.config = workdir / "table.toml"
        self.config.write_text(
            config_toml(
                spec,
                shoe=shoe,
                console=console,
                sensors=f"simusb://{sensors}",
                broker=broker,
                storage=workdir / "journal.sqlite3",
            ),
            encoding="utf-8",
        )
        self.pidfile = workdir / "controller.pid"
        self.log = workdir / "controller.log"
        run = shlex.join(
            [sys.executable, "-m", "table_controller.cli", "run", "--config", str(self.config)]
        )
        loop = f"while :; do {run} & echo $! > {shlex.quote(str(self.pidfile))}; wait $!; done"
        with self.log.open("ab") as out:
            self._proc = subprocess.Popen(
                ["sh", "-c", loop],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                # Its own process group: the loop and the controller end together.
                start_new_session=True,
            )

    def command(self, sig: str) -> str:
        """The shell command that sends ``sig`` to the running controller."""
        return shlex.join(["sh", "-c", f'kill -{sig} "$(cat {shlex.quote(str(self.pidfile))})"'])

    def close(self) -> None:
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
