"""How the simulated people at a rig's table behave: their habits and their pace."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Habits:
    """How the simulated people behave: probabilities and chip amounts (cents)."""

    seat_taken: float = 0.55
    """A position has a player in a round."""
    tie_bet: float = 0.3
    """A player also bets on a tie."""
    goes_to_war: float = 0.7
    """A tied player goes to war (else surrenders, §(i)(3))."""
    war_tie_bet: float = 0.5
    """A player going to war also bets on a tie of the war deal, where the rules allow it
    (§(i)(5))."""
    misread: float = 0.02
    """The shoe fails to read a dealt card (never a burn card: §(h)(1))."""
    past_post: float = 0.04
    """A player adds chips to a playing initial wager after "no more bets" (per round)."""
    initial_chips: tuple[int, ...] = (500, 1000, 2500, 5000, 10000)
    tie_chips: tuple[int, ...] = (100, 500, 1000)

    def __post_init__(self) -> None:
        for name in ("seat_taken", "tie_bet", "goes_to_war", "war_tie_bet", "misread", "past_post"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} is a probability within 0..1, not {value}")
        if not self.initial_chips or not self.tie_chips:
            raise ValueError("initial_chips and tie_chips need at least one amount each")
        if min(self.initial_chips) <= 0 or min(self.tie_chips) <= 0:
            raise ValueError("chip amounts are positive cents")


@dataclass(frozen=True, slots=True)
class Pace:
    """A person's seconds per action (at speed 1); each pause varies by ±40 %."""

    bet_s: float = 1.5
    card_s: float = 1.2
    decision_s: float = 2.5
    notice_s: float = 2.0
    """From an alert on the dealer's console to the dealer acting on it."""
    between_rounds_s: float = 3.0

    @classmethod
    def instant(cls) -> Pace:
        """No pauses at all: for benchmarks, where only the table's own time counts."""
        return cls(bet_s=0.0, card_s=0.0, decision_s=0.0, notice_s=0.0, between_rounds_s=0.0)
