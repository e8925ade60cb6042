"""Waiting for what a table publishes, each wait bounded and named.

A wait that times out is a :class:`~table_controller.rigs.errors.DemoError`
that says what was awaited and what was seen (the observer's summary).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from table_controller.rigs.errors import DemoError
from table_controller.rigs.observer import Observer
from table_controller.rigs.tally import Tally, stats_disagreements, wagers_of


class TableWatch:
    """Bounded waits on one table's messages (``timeout_s`` each)."""

    def __init__(self, observer: Observer, timeout_s: float) -> None:
        self.observer = observer
        self.timeout_s = timeout_s

    async def wait(self, predicate: Callable[[Observer], bool], what: str) -> None:
        try:
            await self.observer.wait(predicate, self.timeout_s)
        except TimeoutError as exc:
            raise DemoError(f"waited for {what}: {exc}") from exc

    async def state(self, predicate: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        def ok(obs: Observer) -> bool:
            state = obs.last("state")
            return state is not None and predicate(state)

        await self.wait(ok, what)
        state = self.observer.last("state")
        assert state is not None
        return state

    async def position(self, position: int, wagers: Mapping[str, int]) -> None:
        def shows(state: dict[str, Any]) -> bool:
            live = wagers_of(state).get(position, {})
            return all(live.get(spot) == cents for spot, cents in wagers.items()) and all(
                spot in wagers for spot in live if spot != "war_tie"
            )

        await self.state(shows, f"P{position} showing {dict(wagers)}")

    async def new_alert(self, code: str, taken: set[str]) -> dict[str, Any]:
        """Wait for a raised alert of ``code`` not in ``taken``; add it there."""
        found: list[dict[str, Any]] = []

        def raised(obs: Observer) -> bool:
            for msg in obs.of("alerts"):
                if msg["code"] == code and msg["resolved_by"] is None and msg["alert"] not in taken:
                    found.append(msg)
                    return True
            return False

        await self.wait(raised, f"a {code} alert")
        alert = found[0]
        taken.add(alert["alert"])
        return alert

    async def record(self, records_before: int, round_id: int) -> dict[str, Any]:
        await self.wait(
            lambda o: len(o.of("rounds")) > records_before, f"the record of round {round_id}"
        )
        record = self.observer.of("rounds")[records_before]
        ids = set(record["alerts"])

        def alerts_known(obs: Observer) -> bool:
            return ids <= {m["alert"] for m in obs.of("alerts")}

        # The alerts topic and the rounds topic may arrive in either order.
        await self.wait(alerts_known, f"the alerts of round {round_id}")
        return record

    async def stats_against(self, tally: Tally, since: datetime) -> tuple[str, ...]:
        """What differs between ``tally`` and the table's first ``stats`` published at or
        after ``since`` that counts as many rounds (or that it never showed them)."""
        found: list[dict[str, Any]] = []

        def current(obs: Observer) -> bool:
            for msg in reversed(obs.of("stats")):
                if datetime.fromisoformat(msg["ts"]) < since:
                    break
                if msg["rounds"] == tally.rounds and msg["voids"] == tally.voids:
                    found.append(msg)
                    return True
            return False

        try:
            await self.observer.wait(current, self.timeout_s)
        except TimeoutError:
            return (f"the table's stats never showed {tally.rounds} rounds",)
        return stats_disagreements(tally, found[0])
