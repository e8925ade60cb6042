"""Theo and the variance of the house's win over a run of rounds, exact (``RECORDER.md``).

Per round at one position: the initial wager × the main-wager edge of the
player's observed policy, plus each tie wager × the tie edge, plus each
war-tie wager × its edge. The main wager's edge is linear in the share ``p``
of ties taken to war: p × edge(always war) + (1 − p) × edge(always surrender),
so a tally keeps both sums and applies ``p`` once the run's decisions are known.

The variance of a policy mixing the two is not linear in ``p``: with X the
player's net per unit, Var_p = p·E_war[X²] + (1 − p)·E_surr[X²] − mean_p²; the
tally keeps every term of it. The wagers are added as independent: the tie
wager's covariance with the main wager of its position and the positions'
shared dealer card are left out (docs/decisions/ratings.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from table_controller.tools.odds import EdgeName, HouseEdges, NetDistribution

Json = dict[str, Any]
ZERO = Fraction(0)


def _second_moment(d: NetDistribution) -> Fraction:
    return sum((p * net * net for p, net in d.outcomes), ZERO)


def in_action(wager: Json) -> bool:
    """A wager that was in action: a void wager (§(h)(3)(iii)) never was."""
    return wager.get("result") != "void"


@dataclass(slots=True)
class Tally:
    """Sums over wagers in cents; ``theo(p)`` and ``variance(p)`` exact in cents (²)."""

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
    notes: list[str] = field(default_factory=list)
    # Σ a × edge under each policy, and the side wagers' Σ a × edge.
    _main_war: Fraction = ZERO
    _main_surr: Fraction = ZERO
    _side: Fraction = ZERO
    # Σ a² × (E_war[X²], E_surr[X²], m_war², m_war·m_surr, m_surr²) and Σ a² × Var(side).
    _sq: list[Fraction] = field(default_factory=lambda: [ZERO] * 5)
    _side_var: Fraction = ZERO

    def add(self, position: Json, edges: HouseEdges) -> None:
        """One round's settled position (a ``war-round/1`` position with an initial wager)."""
        self.rounds += 1
        if position.get("decision") == "war":
            self.wars += 1
        elif position.get("decision") == "surrender":
            self.surrenders += 1
        net = position.get("net")
        if isinstance(net, int):
            self.players_net += net
        for wager in position.get("wagers", []):
            if in_action(wager):
                self._wager(wager, edges)

    def _wager(self, wager: Json, edges: HouseEdges) -> None:
        amount = wager.get("amount")
        if not isinstance(amount, int):
            self.amounts_known = False  # a presence-only board: nothing to weigh
            return
        spot = wager.get("spot")
        self.handle += amount
        a, a2 = Fraction(amount), Fraction(amount) ** 2
        if spot == "initial":
            self.initial += amount
            war, surr = edges.offered("edge_war"), edges.offered("edge_surrender")
            self._main_war += a * -war.mean
            self._main_surr += a * -surr.mean
            terms = (
                _second_moment(war),
                _second_moment(surr),
                war.mean**2,
                war.mean * surr.mean,
                surr.mean**2,
            )
            self._sq = [s + a2 * t for s, t in zip(self._sq, terms, strict=True)]
        elif spot in ("tie", "war_tie"):
            name: EdgeName = "edge_tie" if spot == "tie" else "edge_war_tie"
            dist = edges.wagers[name]
            if spot == "tie":
                self.tie_wagers += 1
                self.tie_handle += amount
            else:
                self.war_tie_wagers += 1
                self.war_tie_handle += amount
            if dist is None:
                self.notes.append(f"rules {edges.rules.value!r} offer no {spot} wager")
                return
            self._side += a * -dist.mean
            self._side_var += a2 * dist.variance
        # The war wager is not weighed on its own: the main wager's edges are per unit
        # of initial wager and already hold it (tools/odds.py).

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
        return Fraction(1) if self._main_war <= self._main_surr else Fraction(0)

    def theo(self) -> Fraction:
        """The house's expected win in cents, exact."""
        p = self.policy()
        return p * self._main_war + (1 - p) * self._main_surr + self._side

    def variance(self) -> Fraction:
        """The variance of the house's win in cents², exact (wagers independent)."""
        p = self.policy()
        ew, es, mww, mws, mss = self._sq
        mean_sq = p * p * mww + 2 * p * (1 - p) * mws + (1 - p) ** 2 * mss
        return p * ew + (1 - p) * es - mean_sq + self._side_var

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
            "notes": sorted(set(self.notes)),
        }
