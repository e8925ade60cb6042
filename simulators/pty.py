"""Serving a simulated device on a pty behind a stable path.

The simulator keeps only the master side. It sees the controller arrive when
the slave is opened (the master stops reporting hang-up) and leave when it is
closed (reads fail with EIO), so "connect" means the same as on TCP.
``disconnect()`` replaces the pty behind the symlink: the old one fails under
the driver, and the driver finds the new one at the same path, as a udev name
points at a replugged adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import select
import tempfile
import tty
from pathlib import Path

from simulators.line import Endpoint, Line

log = logging.getLogger("simulators")

PTY_POLL_S = 0.02
"""How often a pty nobody has open is checked for a controller opening it."""


class _Pty:
    """One pty pair seen from the master side, with its slave's path."""

    def __init__(self) -> None:
        master, slave = os.openpty()
        try:
            # Raw from the start: with the default echo on, what the simulator writes
            # would come straight back to it before the driver configures the port.
            tty.setraw(slave)
            self.slave_path = os.ttyname(slave)
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self.master = master
        self._poll = select.poll()
        self._poll.register(master, select.POLLIN | select.POLLHUP)

    def slave_open(self) -> bool:
        """True while some process has the slave open (Linux: no POLLHUP on the master)."""
        return not any(ev & select.POLLHUP for _, ev in self._poll.poll(0))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.master)


class PtyEndpoint(Endpoint):
    """A pty whose slave is reached at the same path however often it is replaced."""

    def __init__(self, line: Line) -> None:
        self._line = line
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._link_path: Path | None = None
        self._pty: _Pty | None = None
        self._connected = False
        self._out = bytearray()
        self._writer = False
        self._timer: asyncio.Handle | None = None

    @property
    def connected(self) -> bool:
        return self._connected

    async def start(self) -> str:
        if self._tmpdir is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix=f"sim-{self._line.name}-")
            self._link_path = Path(self._tmpdir.name) / self._line.name
        self._new_pty()
        self.url = str(self._link_path)
        log.info("%s simulator on pty %s", self._line.name, self.url)
        return self.url

    def send(self, data: bytes) -> bool:
        if not self._connected or self._pty is None:
            return self._line.dropped(len(data))
        if len(self._out) + len(data) > self._line.max_output_bytes:
            return self._line.dropped(len(data))
        self._out += data
        self._flush()
        return True

    def disconnect(self) -> None:
        if self._pty is not None:
            self._close_pty()
            self._new_pty()

    async def stop(self) -> None:
        if self._pty is not None:
            self._close_pty()
        if self._link_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self._link_path.unlink()

    async def close(self) -> None:
        await self.stop()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def _new_pty(self) -> None:
        assert self._link_path is not None
        pty = _Pty()
        self._pty = pty
        staged = self._link_path.with_suffix(".new")
        with contextlib.suppress(FileNotFoundError):
            staged.unlink()
        staged.symlink_to(pty.slave_path)
        staged.replace(self._link_path)
        self._timer = asyncio.get_running_loop().call_soon(self._watch)

    def _close_pty(self) -> None:
        pty, self._pty = self._pty, None
        if pty is None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._idle(pty)
        pty.close()

    def _idle(self, pty: _Pty) -> None:
        """Stop reading and writing ``pty``; the controller, if it was there, has left."""
        loop = asyncio.get_running_loop()
        loop.remove_reader(pty.master)
        loop.remove_writer(pty.master)
        self._writer = False
        self._out.clear()
        if self._connected:
            self._connected = False
            self._line.left()

    def _watch(self) -> None:
        """Wait for a controller to open the slave, then read from the master."""
        self._timer = None
        pty = self._pty
        if pty is None:
            return
        loop = asyncio.get_running_loop()
        if not pty.slave_open():
            self._timer = loop.call_later(PTY_POLL_S, self._watch)
            return
        self._connected = True
        loop.add_reader(pty.master, self._readable)
        self._line.arrived()

    def _readable(self) -> None:
        pty = self._pty
        assert pty is not None
        try:
            data = os.read(pty.master, 4096)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            data = b""
        if data:
            self._line.received(data)
            return
        # EIO: the controller closed the slave. Wait for it to open it again.
        self._idle(pty)
        self._timer = asyncio.get_running_loop().call_later(PTY_POLL_S, self._watch)

    def _flush(self) -> None:
        pty = self._pty
        if pty is None:
            return
        try:
            while self._out:
                written = os.write(pty.master, self._out)
                del self._out[:written]
        except BlockingIOError:
            pass
        except OSError:
            self._line.dropped(len(self._out))
            self._out.clear()
        loop = asyncio.get_running_loop()
        if self._out and not self._writer:
            loop.add_writer(pty.master, self._flush)
            self._writer = True
        elif not self._out and self._writer:
            loop.remove_writer(pty.master)
            self._writer = False
