"""A dealer loop at the engine's level: what a table's devices would tell its runner.

Devices online, ``SHUFFLED``, the dealer, a seeded layout of wagers on seven
positions with chip values, ``NO_MORE_BETS``, card reads from a seeded shoe with
its cover card, war chips and ``WAR`` or ``SURRENDER`` on ties. It yields one
input at a time and reads the table's state after each has been handled, so
it follows the table as the people at it would. ``bench/tables.py`` and
``bench/journal.py`` feed it to a real :class:`TableRunner`; the device-level
dealer (through simulators and MQTT) is :class:`table_controller.rigs.dealer.Dealer`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Final

from table_controller.engine import (
    DECK,
    CardRead,
    ConsolePress,
    CoverRead,
    DeviceOnline,
    Input,
    Outcome,
    Phase,
    SpotsChanged,
    TableState,
    spot_bit,
)
from table_controller.engine.inputs import DEVICE_NAMES

BETS: Final = (500, 1000, 2500, 10000)
TIE_BETS: Final = (100, 500)
STEPS_PER_ROUND: Final = 64
"""A round is at most 1 + P + 1 + 3 + P + 1 cards, a cover card and P decisions."""


class FeedError(RuntimeError):
    """The table did not move on as a table would (held, or a round that does not end)."""


def wall_clock() -> datetime:
    return datetime.now(UTC)


class SteppedClock:
    """A clock that moves ``step`` per reading: a day's inputs in a second."""

    def __init__(self, start: datetime, step: timedelta) -> None:
        self.now, self.step = start, step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


class Feeder:
    """Seeded inputs for one table at ``positions`` positions, following its ``state``."""

    def __init__(
        self,
        name: str,
        state: Callable[[], TableState],
        *,
        seed: int,
        positions: int = 7,
        clock: Callable[[], datetime] = wall_clock,
    ) -> None:
        self.name = name
        self.state = state
        self.rng = random.Random(seed)
        self.positions = positions
        self.clock = clock
        self.k = 0
        self.n = 0
        self.rounds = 0
        self.shoe: list[str] = []
        self.cover_at = 0
        self.chips: dict[int, int] = {}

    def _press(self, action: str, arg: str | None = None) -> Input:
        self.k += 1
        return ConsolePress(self.clock(), self.k, action, arg)

    def _layout(self) -> Input:
        present = 0
        for bit in self.chips:
            present |= 1 << bit
        return SpotsChanged(self.clock(), present, 0, tuple(sorted(self.chips.items())))

    def _new_shoe(self) -> Input:
        self.shoe = list(DECK) * self.state().setup.decks
        self.rng.shuffle(self.shoe)
        self.cover_at = len(self.shoe) // 4  # cards left when the cover card comes (75 %)
        return self._press("SHUFFLED")

    def _cards(self) -> Iterator[Input]:
        if len(self.shoe) == self.cover_at and not self.state().shoe.cover_seen:
            self.n += 1
            yield CoverRead(self.clock(), self.n)
        self.n += 1
        yield CardRead(self.clock(), self.n, self.shoe.pop())

    def _decide(self) -> Iterator[Input]:
        state = self.state()
        tied = [h for h in state.round.hands if h.outcome is Outcome.TIE and h.decision is None]
        war = [h for h in tied if self.rng.random() < 0.5]
        for h in war:
            self.chips[spot_bit(h.position, 2)] = h.initial.amount or BETS[0]
        if war:
            yield self._layout()
        for h in tied:
            yield self._press("WAR" if h in war else "SURRENDER", str(h.position))

    def play(self, rounds: int) -> Iterator[Input]:
        """The inputs of ``rounds`` whole rounds (the first preceded by devices and a shoe)."""
        for device in DEVICE_NAMES:
            yield DeviceOnline(self.clock(), device)
        yield self._new_shoe()
        yield self._press("DEALER", f"D-{self.name}")
        for _ in range(rounds):
            if self.state().phase is Phase.SHUFFLE_DUE:
                yield self._new_shoe()
            self.chips = {}
            for p in range(1, self.positions + 1):
                if self.rng.random() < 0.85:
                    self.chips[spot_bit(p, 0)] = self.rng.choice(BETS)
                    if self.rng.random() < 0.3:
                        self.chips[spot_bit(p, 1)] = self.rng.choice(TIE_BETS)
            if not self.chips:
                self.chips[spot_bit(1, 0)] = BETS[0]
            yield self._layout()
            yield self._press("NO_MORE_BETS")
            before = self.state().stats.rounds
            for _ in range(STEPS_PER_ROUND):
                state = self.state()
                if state.stats.rounds != before:
                    break
                if state.held:
                    raise FeedError(f"{self.name}: round held by {state.alerts.open}")
                yield from self._decide() if state.phase is Phase.TIE_DECISION else self._cards()
            else:
                raise FeedError(f"{self.name}: the round did not end")
            self.rounds += 1
