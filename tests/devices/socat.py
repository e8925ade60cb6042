"""A null-modem cable made of a ``socat`` pty pair, as a bench's cable between a rig and a
table PC: what one end writes, the other reads."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

START_BOUND_S = 10.0
_PTY = re.compile(rb"PTY is (\S+)")


class SocatCable:
    """``socat -d -d pty,raw,echo=0,link=A pty,raw,echo=0,link=B``: two serial ends.

    ``rig_end`` and ``table_end`` are the device paths socat prints on stderr; the
    links (``rig_link``/``table_link``) stay the same when the cable is put back.
    """

    def __init__(self, folder: Path) -> None:
        if shutil.which("socat") is None:
            pytest.fail("socat is missing: apt-get install socat")
        self.rig_link = folder / "rig-end"
        self.table_link = folder / "table-end"
        self.rig_end = ""
        self.table_end = ""
        self._proc: asyncio.subprocess.Process | None = None

    async def plug(self) -> None:
        """Start socat and read the two device paths from its stderr."""
        proc = await asyncio.create_subprocess_exec(
            "socat",
            "-d",
            "-d",
            f"pty,raw,echo=0,link={self.rig_link}",
            f"pty,raw,echo=0,link={self.table_link}",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        self._proc = proc
        assert proc.stderr is not None
        paths: list[str] = []
        async with asyncio.timeout(START_BOUND_S):
            while len(paths) < 2:
                line = await proc.stderr.readline()
                assert line, "socat ended before printing its two ptys"
                if match := _PTY.search(line):
                    paths.append(match.group(1).decode())
            # "starting data transfer loop": both ends are open from here on.
            while b"starting data transfer loop" not in await proc.stderr.readline():
                pass
        self.rig_end, self.table_end = paths

    async def pull(self) -> None:
        """End socat: both ptys vanish, as a cable pulled (or an adapter unplugged)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.returncode is None:
            proc.terminate()
        await proc.communicate()
