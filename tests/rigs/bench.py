"""A table PC without the table PC: the controller as its own ``table-controller run``
process, under a loop that starts it again when it stops (as systemd does), with the
commands to restart or kill it. The cables are ``tests/devices/socat.py``'s."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from table_controller.rigs.rig import TableSpec, config_toml

SOCAT_START_S = 10.0
_PTY = re.compile(rb"PTY is (\S+)")


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
