"""A whole table on loopback: the three simulators, the controller and an MQTT observer.

Used by the service tests, the demo, the scenario runner and the benchmarks, so
that each of them plays the same real parts: simulators that speak the
devices' bytes over TCP (``socket://`` and ``simusb://``), the production
service (in this process, or as a ``table-controller run`` child process that
a test can kill), and a broker reached over MQTT.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from drivers.console.frames import NakFrame
from drivers.lineframe.cards import Card
from simulators.console import ConsoleSimulator
from simulators.sensors import SimulatedBoard
from simulators.shoe import ShoeSimulator
from table_controller.rigs.observer import WAIT_S, Observer
from table_controller.rigs.spots import SPOT_INITIAL, SPOT_TIE, SPOT_WAR
from table_controller.service.config import TableConfig, load_config
from table_controller.service.service import serve

# The observer and the spot numbers are part of what a rig gives its users.
__all__ = [
    "SPOT_INITIAL",
    "SPOT_TIE",
    "SPOT_WAR",
    "WAIT_S",
    "Observer",
    "TableRig",
    "TableSpec",
    "config_toml",
]


@dataclass
class TableSpec:
    """What table the rig builds."""

    table_id: str = "war-07"
    site: str = "main-floor"
    rules: str = "ny"
    decks: int = 6
    positions: int = 7
    rfid: bool = True
    seed: int | None = None
    cards: Sequence[Card] | None = None
    cover_after: int | None = None
    protocol: str = "5"
    limits: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    profile: Mapping[str, Any] = field(default_factory=dict)
    # The config names the simulated board by its serial, as a table PC's does.
    pin_board: bool = True


def config_toml(
    spec: TableSpec, *, shoe: str, console: str, sensors: str, broker: str, storage: Path
) -> str:
    """The table config (docs/devices.md) for these device URLs."""
    limits = ", ".join(f"{k} = [{lo}, {hi}]" for k, (lo, hi) in spec.limits.items())
    lines = [
        "[table]",
        f'id = "{spec.table_id}"',
        f'site = "{spec.site}"',
        f'rules = "{spec.rules}"',
        f"decks = {spec.decks}",
        f"positions = {spec.positions}",
    ]
    if limits:
        lines.append(f"limits = {{ {limits} }}")
    lines += [
        "",
        "[devices]",
        f'shoe = "{shoe}"',
        f'console = "{console}"',
        f'sensors = "{sensors}"',
        "",
        "[mqtt]",
        f'url = "{broker}"',
        f'protocol = "{spec.protocol}"',
        "",
        "[storage]",
        f'path = "{storage}"',
    ]
    if spec.profile:
        lines += ["", "[profile]"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in spec.profile.items()]
    return "\n".join(lines) + "\n"


class TableRig:
    """Simulators, a controller and an observer for one table on loopback."""

    def __init__(
        self,
        broker_url: str,
        workdir: Path,
        spec: TableSpec | None = None,
        *,
        observer_session: str | None = None,
    ) -> None:
        self.spec = spec or TableSpec()
        self.observer_session = observer_session
        self.broker_url = broker_url
        self.workdir = workdir
        self.shoe = ShoeSimulator(
            decks=self.spec.decks,
            seed=self.spec.seed,
            cards=self.spec.cards,
            cover_after=self.spec.cover_after,
        )
        self.console = ConsoleSimulator()
        self.board = SimulatedBoard(rfid=self.spec.rfid)
        self.config_path = workdir / f"{self.spec.table_id}.toml"
        self.journal_path = workdir / f"{self.spec.table_id}.sqlite3"
        self.config: TableConfig | None = None
        self.observer: Observer | None = None
        self._stop: asyncio.Event | None = None
        self._service: asyncio.Task[None] | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def prefix(self) -> str:
        return f"casino/{self.spec.site}/table/{self.spec.table_id}"

    async def __aenter__(self) -> Self:
        shoe_url = await self.shoe.serve_tcp()
        console_url = await self.console.serve_tcp()
        await self.board.start()
        self.config_path.write_text(
            config_toml(
                self.spec,
                shoe=shoe_url,
                console=console_url,
                sensors=self.board.url
                + (f"?serial={self.board.identity.serial}" if self.spec.pin_board else ""),
                broker=self.broker_url,
                storage=self.journal_path,
            ),
            encoding="utf-8",
        )
        self.config = load_config(self.config_path)
        self.observer = Observer(
            self.broker_url,
            f"{self.prefix}/#",
            protocol=self.spec.protocol,
            session=self.observer_session,
        )
        await self.observer.start()
        return self

    async def __aexit__(
        self,
        et: type[BaseException] | None,
        e: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop_controller()
        self.kill_controller_process()
        if self.observer is not None:
            await self.observer.close()
        await self.board.close()
        await self.console.close()
        await self.shoe.close()

    # -- the controller ------------------------------------------------------------

    async def start_controller(self, stop: asyncio.Event | None = None) -> None:
        """Run the production service in this process (until ``stop``, when given, is set:
        the service sets it on SIGINT/SIGTERM, so a caller can stop with it)."""
        assert self.config is not None
        self._stop = stop if stop is not None else asyncio.Event()
        self._service = asyncio.create_task(serve(self.config, stop=self._stop), name="service")

    async def stop_controller(self) -> None:
        if self._service is None or self._stop is None:
            return
        self._stop.set()
        await self._service
        self._service = None

    def start_controller_process(
        self, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Run ``table-controller run`` as a child process (so a test can SIGKILL it).

        ``env``: more environment variables for it (``NOTIFY_SOCKET``, say).
        """
        log = (self.workdir / "controller.log").open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "table_controller.cli",
                "run",
                "--config",
                str(self.config_path),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        log.close()
        return self.process

    def kill_controller_process(self, sig: int = signal.SIGKILL) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    # -- the dealer and the players -------------------------------------------------

    def bet(
        self,
        position: int,
        initial: int | None = None,
        tie: int | None = None,
        war: int | None = None,
    ) -> None:
        """Chips on a position's spots (cents; None clears the spot)."""
        self.board.set_spots(
            {
                (position, SPOT_INITIAL): initial,
                (position, SPOT_TIE): tie,
                (position, SPOT_WAR): war,
            }
        )

    async def press(self, action: str, arg: str | int | None = None) -> str | None:
        """Press a console button; the NAK reason, or None for an ACK."""
        k = self.console.press(action, arg)
        async with asyncio.timeout(WAIT_S):
            answer = await self.console.answer(k)
        return answer.reason if isinstance(answer, NakFrame) else None

    async def wait(self, predicate: Callable[[Observer], bool], timeout: float = WAIT_S) -> None:
        assert self.observer is not None
        await self.observer.wait(predicate, timeout)

    async def wait_state(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S
    ) -> dict[str, Any]:
        """Wait for a retained ``state`` the predicate accepts; return it."""

        def ok(obs: Observer) -> bool:
            last = obs.last("state")
            return last is not None and predicate(last)

        await self.wait(ok, timeout)
        assert self.observer is not None
        state = self.observer.last("state")
        assert state is not None
        return state

    async def wait_wagers(self, wagers: Mapping[int, Mapping[str, int | None]]) -> None:
        """Wait until the controller's state shows exactly these live wagers."""

        def shows(state: dict[str, Any]) -> bool:
            live = {p["position"]: p["wagers"] for p in state["positions"] if p["wagers"]}
            return live == {p: dict(w) for p, w in wagers.items()}

        await self.wait_state(shows)

    async def wait_rounds(self, count: int, timeout: float = WAIT_S) -> list[dict[str, Any]]:
        await self.wait(lambda o: len(o.of("rounds")) >= count, timeout)
        assert self.observer is not None
        return self.observer.of("rounds")

    async def wait_status(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S
    ) -> dict[str, Any]:
        """Wait for a retained ``status`` the predicate accepts; return it."""

        def ok(obs: Observer) -> bool:
            last = obs.last("status")
            return last is not None and predicate(last)

        await self.wait(ok, timeout)
        assert self.observer is not None
        status = self.observer.last("status")
        assert status is not None
        return status

    async def wait_online(self, timeout: float = WAIT_S) -> dict[str, Any]:
        """Wait until the last ``status`` says online with every device ok."""
        return await self.wait_status(
            lambda s: s["online"] and all(d["state"] == "ok" for d in s["devices"].values()),
            timeout,
        )
