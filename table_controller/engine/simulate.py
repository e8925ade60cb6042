"""Play rounds through the real engine: the one session loop, and the edge it measures.

``Session`` drives a ``RoundEngine`` as a table would: inputs with rising
times and press numbers, a seeded shuffled shoe with a cover card, the
layout's chips, ``NO_MORE_BETS``, card reads and the tie decisions a policy
takes. The odds tool (``simulate``), the engine benchmark and the engine
tests' random sessions all play their rounds through ``Session.play_round``.

``simulate`` measures the edge per unit of initial wager (the war wager is
extra money put up on a tie), like the exact figures of docs/rules.md, from the
round records the engine writes: the settlement under test is the table's.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from table_controller.engine.cards import DECK
from table_controller.engine.domain import (
    SPOT_INITIAL,
    SPOT_TIE,
    SPOT_WAR,
    Phase,
    SpotKind,
    TableSetup,
    spot_bit,
)
from table_controller.engine.engine import RoundEngine
from table_controller.engine.errors import RulesError
from table_controller.engine.inputs import CardRead, ConsolePress, CoverRead, Input, SpotsChanged
from table_controller.engine.outputs import ConsoleReply, Output, Refusal, RoundRecorded
from table_controller.engine.records import RoundRecord
from table_controller.engine.rules import RulesProfile

UNIT_CENTS: Final = 100
ORIGIN: Final = datetime(2024, 1, 1, tzinfo=UTC)

# A policy at the tie decision: given the session and the tied positions, it
# places war wagers and presses WAR or SURRENDER for each.
Decide = Callable[["Session", list[int]], None]
# A step of the dealer's other than dealing the next card: True if it acted.
Disturb = Callable[["Session"], bool]


class Session:
    """One table played input by input; keeps the journal and outputs when asked."""

    def __init__(
        self,
        setup: TableSetup,
        *,
        seed: int = 0,
        origin: datetime = ORIGIN,
        step: timedelta = timedelta(milliseconds=1),
        penetration: float = 0.75,
        keep: bool = False,
    ) -> None:
        if not 0.0 < penetration <= 1.0:
            raise RulesError("penetration", "a fraction of the shoe in (0, 1]")
        self.setup = setup
        self.engine = RoundEngine(setup)
        self.rng = random.Random(seed)
        self.origin = origin
        self.step = step
        self.penetration = penetration
        self.keep = keep
        self.inputs: list[Input] = []
        self.outputs: list[Output] = []
        self.last: list[Output] = []
        self.rounds: list[RoundRecord] = []
        self.ticks = 0
        self.k = 0
        self.n = 0
        self.shoe: list[str] = []
        self.cover_at = 0
        self.shoes = 0
        # The layout: cents per spot bit (None: chips of unknown value).
        self.chips: dict[int, int | None] = {}
        self.faults = 0
        self.rfid = True
        self._sent: SpotsChanged | None = None

    # -- feeding

    def at(self) -> datetime:
        self.ticks += 1
        return self.origin + self.ticks * self.step

    def feed(self, inp: Input) -> list[Output]:
        out = self.engine.feed(inp)
        self.last = out
        if self.keep:
            self.inputs.append(inp)
            self.outputs.extend(out)
        for o in out:
            if type(o) is RoundRecorded:
                self.rounds.append(o.record)
        return out

    def press(self, action: str, arg: str | None = None) -> Refusal | None:
        """Press a console button; the NAK reason, or None for ACK."""
        self.k += 1
        out = self.feed(ConsolePress(self.at(), self.k, action, arg))
        replies = [o for o in out if type(o) is ConsoleReply]
        (reply,) = replies  # docs/devices.md: exactly one answer per press
        assert reply.k == self.k
        return reply.reason

    def card(self, card: str) -> list[Output]:
        self.n += 1
        return self.feed(CardRead(self.at(), self.n, card))

    def cover(self) -> list[Output]:
        self.n += 1
        return self.feed(CoverRead(self.at(), self.n))

    def snapshot_spots(self) -> list[Output]:
        """Send the layout as the sensor board would (values only from an RFID board)."""
        present = 0
        for b in self.chips:
            present |= 1 << b
        values = tuple(sorted((b, c) for b, c in self.chips.items() if c is not None))
        inp = SpotsChanged(self.at(), present, self.faults, values if self.rfid else None)
        self._sent = inp
        return self.feed(inp)

    def lay(self, chips: Mapping[int, int | None]) -> None:
        """Set the layout to ``chips`` (bit -> cents), sending it if it changed."""
        if dict(chips) != self.chips or self._sent is None:
            self.chips = dict(chips)
            self.snapshot_spots()

    # -- the shoe

    def new_shoe(self) -> None:
        """A freshly shuffled shoe, the cover card at the penetration, and SHUFFLED."""
        self.shoe = list(DECK) * self.setup.decks
        self.rng.shuffle(self.shoe)
        self.shoe.reverse()  # dealt from the end
        # The cover card goes in at the penetration: that many cards are dealt before it.
        self.cover_at = len(self.shoe) - max(
            1, min(len(self.shoe), round(len(self.shoe) * self.penetration))
        )
        self.shoes += 1
        self.press("SHUFFLED")

    def deal_next(self) -> bool:
        """The next card out of the shoe (the cover first where it lies); False when empty."""
        if not self.shoe:
            return False
        if len(self.shoe) == self.cover_at and not self.engine.cover_seen:
            self.cover()
        self.card(self.shoe.pop())
        return True

    # -- a round

    def play_round(
        self,
        chips: Mapping[int, int | None],
        decide: Decide,
        *,
        no_more_bets: bool = True,
        disturb: Disturb | None = None,
        max_steps: int | None = None,
    ) -> RoundRecord | None:
        """One round from the wagers to its record; None if it ended without one."""
        engine = self.engine
        if engine.phase is Phase.SHUFFLE_DUE or not self.shoe:
            self.new_shoe()
        self.lay(chips)
        if no_more_bets:
            self.press("NO_MORE_BETS")
        before = len(self.rounds)
        steps = 0
        while len(self.rounds) == before:
            if max_steps is not None and steps >= max_steps:
                return None
            steps += 1
            if disturb is not None and disturb(self):
                continue
            if engine.phase is Phase.TIE_DECISION and not engine.held:
                decide(self, engine.undecided_ties())
                continue
            if not self.deal_next():
                # The shoe ran out mid-round (penetration near 1): a misdeal.
                self.press("VOID_ROUND")
                self.shoe = []
        return self.rounds[-1]


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
        raise RulesError("rounds", "at least 1")
    if policy not in ("war", "surrender"):
        raise RulesError("policy", "'war' or 'surrender'")
    session = Session(TableSetup(rules, decks, positions), seed=seed, penetration=penetration)
    # One unit on each position's initial and tie spots.
    base: dict[int, int | None] = {}
    for p in range(1, positions + 1):
        base[spot_bit(p, SPOT_INITIAL)] = UNIT_CENTS
        base[spot_bit(p, SPOT_TIE)] = UNIT_CENTS

    def decide(s: Session, tied: list[int]) -> None:
        if policy == "war":
            chips = dict(base)
            for p in tied:
                # The war wager goes on the war spot; the tie spot is cleared so
                # that no tie wager rides on the war deal.
                chips[spot_bit(p, SPOT_WAR)] = UNIT_CENTS
                del chips[spot_bit(p, SPOT_TIE)]
            s.lay(chips)
        for p in tied:
            s.press("WAR" if policy == "war" else "SURRENDER", str(p))

    nets: list[float] = []
    tie_nets: list[float] = []
    ties = wars = 0
    while len(nets) < rounds:
        record = session.play_round(base, decide)
        if record is None or record.void:
            continue
        net = tie_net = 0
        for pos in record.positions:
            ties += pos.outcome == "tie"
            wars += pos.decision == "war"
            for w in pos.wagers:
                assert w.net is not None
                if w.spot is SpotKind.TIE:
                    tie_net += w.net
                elif w.spot in (SpotKind.INITIAL, SpotKind.WAR):
                    net += w.net
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
        shoes=session.shoes,
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
