"""Play many rounds through the real engine and measure what the players win.

Every round goes through ``transition()`` exactly as at the table: a seeded,
shuffled shoe with a cover card, ``SHUFFLED``, a sensor snapshot with one unit
(100 cents) on each position's initial and tie spots, ``NO_MORE_BETS``, card
reads, and on a tie either the war wager placed and ``WAR`` or ``SURRENDER``.
The players' net comes from the round records the engine writes, so the
settlement arithmetic under test is the one the table uses.

The measured edge is per unit of initial wager (the war wager is extra money
put up on a tie), like the exact figures of GAME.md.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from table_controller.engine.cards import DECK
from table_controller.engine.inputs import (
    CardRead,
    ConsolePress,
    CoverRead,
    Input,
    SpotsChanged,
)
from table_controller.engine.outputs import Output, RoundRecorded
from table_controller.engine.rules import RulesProfile
from table_controller.engine.state import (
    SPOT_INITIAL,
    SPOT_TIE,
    SPOT_WAR,
    Outcome,
    Phase,
    TableSetup,
    TableState,
    initial_state,
    spot_bit,
)
from table_controller.engine.transition import transition

UNIT_CENTS: Final = 100
# Input times: a fixed origin and one millisecond per input keep runs reproducible.
_ORIGIN: Final = datetime(2024, 1, 1, tzinfo=UTC)
_STEP: Final = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class SimulationResult:
    rules: str
    decks: int
    positions: int
    policy: str
    seed: int
    rounds: int
    # Initial wagers placed, in units (one per position per round).
    units_wagered: int
    # The players' net on the initial and war wagers, in units.
    net_units: float
    # House edge per unit of initial wager: -net / initial wagered.
    edge: float
    # Standard error of ``edge``: the per-round net's standard deviation over
    # sqrt(rounds), divided by the mean initial wager per round.
    stderr: float
    # The tie wager of one unit beside each initial wager.
    tie_bet_edge: float
    tie_bet_stderr: float
    shoes: int
    ties: int
    wars: int


class _Table:
    """Feeds inputs with increasing times and press numbers; collects records."""

    __slots__ = ("k", "present", "records", "state", "ticks")

    def __init__(self, setup: TableSetup) -> None:
        self.state: TableState = initial_state(setup)
        self.ticks = 0
        self.k = 0
        self.records: list[RoundRecorded] = []
        self.present = 0

    def at(self) -> datetime:
        self.ticks += 1
        return _ORIGIN + self.ticks * _STEP

    def feed(self, inp: Input) -> list[Output]:
        self.state, out = transition(self.state, inp)
        for o in out:
            if type(o) is RoundRecorded:
                self.records.append(o)
        return out

    def press(self, action: str, arg: str | None = None) -> None:
        self.k += 1
        self.feed(ConsolePress(self.at(), self.k, action, arg))

    def spots(self, present: int) -> None:
        self.present = present
        values = tuple((b, UNIT_CENTS) for b in range(present.bit_length()) if (present >> b) & 1)
        self.feed(SpotsChanged(self.at(), present, 0, values))


def _new_shoe(rng: random.Random, decks: int, penetration: float) -> tuple[list[str], int]:
    cards = list(DECK) * decks
    rng.shuffle(cards)
    # The cover card goes in at the penetration: that many cards are dealt before it.
    cover = max(1, min(len(cards), round(len(cards) * penetration)))
    return cards, cover


def simulate(
    rules: RulesProfile,
    decks: int,
    rounds: int,
    seed: int,
    *,
    positions: int = 1,
    policy: Literal["war", "surrender"] = "war",
    penetration: float = 0.75,
) -> SimulationResult:
    """Play ``rounds`` settled rounds through the engine from seeded shoes; measure the edge."""
    if rounds < 1:
        raise ValueError("rounds: at least 1")
    if not 0.0 < penetration <= 1.0:
        raise ValueError("penetration: a fraction of the shoe in (0, 1]")
    if policy not in ("war", "surrender"):
        raise ValueError("policy: 'war' or 'surrender'")
    setup = TableSetup(rules, decks, positions)
    rng = random.Random(seed)
    table = _Table(setup)
    base = 0
    for p in range(1, positions + 1):
        base |= (1 << spot_bit(p, SPOT_INITIAL)) | (1 << spot_bit(p, SPOT_TIE))
    table.spots(base)
    shoe: list[str] = []
    cover = 0
    drawn = 0
    shoes = 0
    n = 0
    nets: list[float] = []
    tie_nets: list[float] = []
    ties = wars = 0
    while len(nets) < rounds:
        state = table.state
        if state.phase is Phase.SHUFFLE_DUE or not shoe:
            shoe, cover = _new_shoe(rng, decks, penetration)
            drawn = 0
            shoes += 1
            table.press("SHUFFLED")
        if table.present != base:
            table.spots(base)
        table.press("NO_MORE_BETS")
        before = len(table.records)
        while len(table.records) == before:
            state = table.state
            if state.phase is Phase.TIE_DECISION:
                tied = [h.position for h in state.round.hands if h.outcome is Outcome.TIE]
                if policy == "war":
                    present = base
                    for p in tied:
                        # The war wager goes on the war spot; the tie spot is
                        # cleared so that no tie wager rides on the war deal.
                        present |= 1 << spot_bit(p, SPOT_WAR)
                        present &= ~(1 << spot_bit(p, SPOT_TIE))
                    table.spots(present)
                for p in tied:
                    table.press("WAR" if policy == "war" else "SURRENDER", str(p))
                continue
            if drawn >= len(shoe):
                # The shoe ran out mid-round (penetration near 1): a misdeal.
                table.press("VOID_ROUND")
                shoe = []
                break
            if drawn == cover and not state.shoe.cover_seen:
                n += 1
                table.feed(CoverRead(table.at(), n))
            n += 1
            table.feed(CardRead(table.at(), n, shoe[drawn]))
            drawn += 1
        else:
            record = table.records[-1].record
            if record["void"]:
                continue
            net = 0
            tie_net = 0
            for pos in record["positions"]:
                if pos["outcome"] == "tie":
                    ties += 1
                if pos["decision"] == "war":
                    wars += 1
                for w in pos["wagers"]:
                    if w["spot"] == "tie":
                        tie_net += w["net"]
                    elif w["spot"] in ("initial", "war"):
                        net += w["net"]
            nets.append(net / UNIT_CENTS)
            tie_nets.append(tie_net / UNIT_CENTS)
    total = math.fsum(nets)
    wagered = rounds * positions
    return SimulationResult(
        rules=rules.name.value,
        decks=decks,
        positions=positions,
        policy=policy,
        seed=seed,
        rounds=rounds,
        units_wagered=wagered,
        net_units=total,
        edge=-total / wagered,
        stderr=_stderr(nets) / positions,
        tie_bet_edge=-math.fsum(tie_nets) / wagered,
        tie_bet_stderr=_stderr(tie_nets) / positions,
        shoes=shoes,
        ties=ties,
        wars=wars,
    )


def _stderr(xs: list[float]) -> float:
    """Standard error of the mean of ``xs``."""
    count = len(xs)
    if count < 2:
        return math.inf
    mean = math.fsum(xs) / count
    var = math.fsum((x - mean) ** 2 for x in xs) / (count - 1)
    return math.sqrt(var / count)
