"""Theo and the variance of the house's win over a run of rounds, exact (``docs/recorder.md``).

Per round at one position: the initial wager × the main-wager edge of the
player's observed policy, plus each tie wager × the tie edge, plus each
war-tie wager × its edge. The main wager's edge is linear in the share ``p``
of ties taken to war: p × edge(always war) + (1 − p) × edge(always surrender),
so a tally keeps both sums and applies ``p`` once the run's decisions are known.

The variance of a policy mixing the two is not linear in ``p``: with X the
player's net per unit, Var_p = p·E_war[X²] + (1 − p)·E_surr[X²] − mean_p², weighed
by Σ amount² of the initial wagers. The wagers are added as independent: the tie
wager's covariance with the main wager of its position and the positions'
shared dealer card are left out (docs/decisions/ratings.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from table_controller.tools.odds import EdgeName, HouseEdges, NetDistribution

Json = dict[str, Any]
ZERO = Fraction(0)


def _second_moment(d: NetDistribution) -> Fraction:
    return sum((p * net * net for p, net in d.outcomes), ZERO)


def in_action(wager: Json) -> bool:
    """A wager that was in action: a void wager (§(h)(3)(iii)) never was."""
    return wager.get("result") != "void"


SPOTS: Final = ("initial", "tie", "war_tie")
_SIDE: Final[dict[str, EdgeName]] = {"tie": "edge_tie", "war_tie": "edge_war_tie"}


@dataclass(slots=True)
class _Sums:
    """Integer sums of one rule set's wagers: Σ amount and Σ amount², per spot."""

    edges: HouseEdges
    a: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPOTS, 0))
    a2: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPOTS, 0))


_COUNTS: Final = (
    *("rounds", "handle", "initial", "wars", "surrenders", "tie_wagers", "tie_handle"),
    *("war_tie_wagers", "war_tie_handle", "players_net"),
)


@dataclass(slots=True)
class Tally:
    """Sums over wagers in cents; ``theo(p)`` and ``variance(p)`` exact in cents (²).

    Per wager only integers are added (per rule set: a report reads every round of
    a shift); the exact fractions are applied once, in :meth:`theo` and :meth:`variance`.
    """

    rounds: int = 0
    handle: int = 0
    initial: int = 0
    wars: int = 0
    surrenders: int = 0
    tie_wagers: int = 0
    tie_handle: int = 0
    war_tie_wagers: int = 0
    war_tie_handle: int = 0
    players_net: int = 0
    amounts_known: bool = True
    priced: bool = True  # every round's figures were computed
    notes: list[str] = field(default_factory=list)
    # By the identity of the (cached) figures of each rule set met.
    _sums: dict[int, _Sums] = field(default_factory=dict)

    def add(self, position: Json, edges: HouseEdges | str) -> None:
        """One round's settled position (a ``war-round/1`` position with an initial wager);
        ``edges`` is the round's figures, or why it has none (its wagers add no theo)."""
        self.rounds += 1
        if position.get("decision") == "war":
            self.wars += 1
        elif position.get("decision") == "surrender":
            self.surrenders += 1
        net = position.get("net")
        if isinstance(net, int):
            self.players_net += net
        if isinstance(edges, str):
            self.notes.append(edges)
            self.priced = False
            sums = None
        else:
            sums = self._sums.get(id(edges))
            if sums is None:
                sums = self._sums[id(edges)] = _Sums(edges)
        for wager in position.get("wagers", []):
            if in_action(wager):
                self._wager(wager, sums)

    def merge(self, other: Tally) -> None:
        """Add ``other``'s rounds (another part of the same window) to this tally."""
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.amounts_known = self.amounts_known and other.amounts_known
        self.priced = self.priced and other.priced
        self.notes += other.notes
        for key, theirs in other._sums.items():
            mine = self._sums.get(key)
            if mine is None:
                mine = self._sums[key] = _Sums(theirs.edges)
            for spot in SPOTS:
                mine.a[spot] += theirs.a[spot]
                mine.a2[spot] += theirs.a2[spot]

    def _wager(self, wager: Json, sums: _Sums | None) -> None:
        amount = wager.get("amount")
        if not isinstance(amount, int):
            self.amounts_known = False  # a presence-only board: nothing to weigh
            return
        spot = wager.get("spot")
        self.handle += amount
        # The war wager is not weighed on its own: the main wager's edges are per unit
        # of initial wager and already hold it (tools/odds.py).
        if spot not in SPOTS:
            return
        # Counted whether or not the round's figures are known: the average bet divides
        # by every round of the session.
        if spot == "initial":
            self.initial += amount
        elif spot == "tie":
            self.tie_wagers += 1
            self.tie_handle += amount
        else:
            self.war_tie_wagers += 1
            self.war_tie_handle += amount
        if sums is None:
            return  # no theo for a round the odds cannot price
        sums.a[spot] += amount
        sums.a2[spot] += amount * amount
        if spot == "war_tie" and sums.edges.wagers["edge_war_tie"] is None:
            self.notes.append(f"rules {sums.edges.rules.value!r} offer no war_tie wager")

    def _main(self) -> tuple[Fraction, Fraction]:
        """Σ initial × edge, always going to war and always surrendering."""
        war = sum((s.a["initial"] * s.edges.edge_war for s in self._sums.values()), ZERO)
        surr = sum((s.a["initial"] * s.edges.edge_surrender for s in self._sums.values()), ZERO)
        return war, surr

    @property
    def war_share(self) -> Fraction | None:
        """The observed share of ties taken to war; None without a decision."""
        decided = self.wars + self.surrenders
        return None if decided == 0 else Fraction(self.wars, decided)

    def policy(self) -> Fraction:
        """``p`` for theo: the observed share; without a decision, the policy of the lower
        theo, so that a player whose choice was never seen is never overrated."""
        share = self.war_share
        if share is not None:
            return share
        war, surr = self._main()
        return Fraction(1) if war <= surr else Fraction(0)

    def theo(self) -> Fraction:
        """The house's expected win in cents, exact."""
        p = self.policy()
        war, surr = self._main()
        side = ZERO
        for s in self._sums.values():
            for spot, name in _SIDE.items():
                dist = s.edges.wagers[name]
                if dist is not None:
                    side += s.a[spot] * -dist.mean
        return p * war + (1 - p) * surr + side

    def variance(self) -> Fraction:
        """The variance of the house's win in cents², exact (wagers independent)."""
        p = self.policy()
        total = ZERO
        for s in self._sums.values():
            war, surr = s.edges.offered("edge_war"), s.edges.offered("edge_surrender")
            mean = p * war.mean + (1 - p) * surr.mean
            second = p * _second_moment(war) + (1 - p) * _second_moment(surr)
            total += s.a2["initial"] * (second - mean * mean)
            for spot, name in _SIDE.items():
                dist = s.edges.wagers[name]
                if dist is not None:
                    total += s.a2[spot] * dist.variance
        return total

    def figures(self) -> Json:
        """The tally as JSON: amounts in cents, theo rounded to the cent and exact."""
        theo = self.theo()
        share = self.war_share
        return {
            "rounds": self.rounds,
            "handle": self.handle,
            "average_bet": None if self.rounds == 0 else round(Fraction(self.initial, self.rounds)),
            "wars": self.wars,
            "surrenders": self.surrenders,
            "war_share": None if share is None else float(share),
            "tie_wagers": self.tie_wagers,
            "tie_handle": self.tie_handle,
            "war_tie_wagers": self.war_tie_wagers,
            "war_tie_handle": self.war_tie_handle,
            "players_net": self.players_net,
            "actual": -self.players_net,
            "theo": round(theo),
            "theo_exact": str(theo),
            "amounts_known": self.amounts_known,
            "priced": self.priced,
            "notes": sorted(set(self.notes)),
        }
