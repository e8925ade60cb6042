"""What a simulated dealer played, and how it compares with the table's records.

:class:`Tally` adds up the published round records; :func:`compare_record`
says where a record differs from what the dealer dealt and the players did;
:func:`stats_disagreements` where the table's own ``stats`` differ from the
tally.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from drivers.lineframe.cards import Card


@dataclass(frozen=True, slots=True)
class Hand:
    """What the dealer knows of one playing position in the round being played."""

    position: int
    initial: int
    tie: int | None
    card: Card | None = None
    decision: str | None = None
    war: int | None = None
    war_tie: int | None = None
    war_card: Card | None = None


@dataclass(frozen=True, slots=True)
class RoundPlayed:
    """One round as published, with what the dealer found on checking it."""

    round_id: int
    record: Mapping[str, Any]
    """The ``war-round/1`` record the controller published."""
    alert_codes: tuple[str, ...]
    """The codes of the record's alerts, in order."""
    caused: tuple[str, ...]
    """The alert codes of the mistakes the simulated people made in this round."""
    disagreements: tuple[str, ...]
    """Where the record differs from what happened at the table; empty when it agrees."""


Counts = tuple[tuple[str, int], ...]


def _count(pairs: Counts, codes: tuple[str, ...]) -> Counts:
    counts = Counter(dict(pairs))
    counts.update(codes)
    return tuple(sorted(counts.items()))


@dataclass(frozen=True, slots=True)
class Tally:
    """Totals over the rounds played, from the published round records."""

    rounds: int = 0
    voids: int = 0
    ties: int = 0
    wars: int = 0
    surrenders: int = 0
    alerts_by_code: Counts = ()
    """The alerts raised, by code: those of the round records as rounds are added;
    :meth:`with_alerts` sets them from the ``alerts`` topic instead."""
    caused_by_code: Counts = ()
    players_net: int | None = 0
    """Cents; None once a round's net is unknown."""
    disagreements: tuple[str, ...] = ()

    @property
    def alerts(self) -> int:
        return sum(n for _, n in self.alerts_by_code)

    def add(self, played: RoundPlayed) -> Tally:
        record = played.record
        positions = record["positions"]
        net = record["net"]
        void = bool(record["void"])
        return Tally(
            rounds=self.rounds + (0 if void else 1),
            voids=self.voids + (1 if void else 0),
            ties=self.ties + sum(1 for p in positions if p["outcome"] == "tie"),
            wars=self.wars + sum(1 for p in positions if p["decision"] == "war"),
            surrenders=self.surrenders + sum(1 for p in positions if p["decision"] == "surrender"),
            alerts_by_code=_count(self.alerts_by_code, played.alert_codes),
            caused_by_code=_count(self.caused_by_code, played.caused),
            players_net=None if self.players_net is None or net is None else self.players_net + net,
            disagreements=(
                *self.disagreements,
                *(f"round {played.round_id}: {d}" for d in played.disagreements),
            ),
        )

    def with_alerts(self, codes: list[str]) -> Tally:
        """The alerts as the table raised them (one code per alert raised), so that a
        round cut short by a stop counts its alerts as the pit did."""
        return replace(self, alerts_by_code=_count((), tuple(codes)))

    def to_json(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "voids": self.voids,
            "ties": self.ties,
            "wars": self.wars,
            "surrenders": self.surrenders,
            "alerts": self.alerts,
            "alerts_by_code": dict(self.alerts_by_code),
            "caused_by_code": dict(self.caused_by_code),
            "players_net": self.players_net,
            "disagreements": list(self.disagreements),
        }


def outcome(player: Card, dealer: Card) -> str:
    # §(f): rank alone decides, ace high; the suit never counts.
    if player.rank > dealer.rank:
        return "win"
    return "lose" if player.rank < dealer.rank else "tie"


def stats_disagreements(tally: Tally, stats: Mapping[str, Any]) -> tuple[str, ...]:
    """Where the table's own ``stats`` (``table-stats/1``) differ from the tally, one line
    per figure. ``stats.win`` is the house's: the players' net is its opposite."""
    win = stats["win"]
    theirs = {
        "ties": stats["ties"],
        "wars": stats["wars"],
        "surrenders": stats["surrenders"],
        "alerts": sum(stats["alerts_by_code"].values()),
        "players' net": None if win is None else -win,
    }
    ours = {
        "ties": tally.ties,
        "wars": tally.wars,
        "surrenders": tally.surrenders,
        "alerts": tally.alerts,
        "players' net": tally.players_net,
    }
    return tuple(
        f"the table's stats say {name} {theirs[name]}, the round records {ours[name]}"
        for name in ours
        if theirs[name] != ours[name]
    )


def spots(**amounts: int | None) -> dict[str, int]:
    return {spot: cents for spot, cents in amounts.items() if cents is not None}


def wagers_of(state: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["position"]: p["wagers"] for p in state["positions"] if p["wagers"]}


def _text(card: Card | None) -> str | None:
    return None if card is None else str(card)


def compare_record(
    record: Mapping[str, Any],
    round_id: int,
    hands: list[Hand],
    dealer_card: Card,
    dealer_war_card: Card | None,
) -> list[str]:
    """Where the record differs from what the dealer dealt and the players did."""
    problems: list[str] = []

    def differs(what: str, recorded: object, dealt: object) -> None:
        if recorded != dealt:
            problems.append(f"{what}: recorded {recorded!r}, at the table {dealt!r}")

    differs("round id", record["round_id"], round_id)
    differs("void", record["void"], False)
    differs("dealer card", record["dealer_card"], str(dealer_card))
    differs("dealer war card", record["dealer_war_card"], _text(dealer_war_card))
    by_position = {p["position"]: p for p in record["positions"]}
    differs("playing positions", sorted(by_position), [h.position for h in hands])
    for hand in hands:
        rec = by_position.get(hand.position)
        if rec is None or hand.card is None:
            continue
        where = f"P{hand.position}"
        war_outcome = None
        if hand.war_card is not None and dealer_war_card is not None:
            war_outcome = outcome(hand.war_card, dealer_war_card)
        differs(f"{where} card", rec["card"], str(hand.card))
        differs(f"{where} outcome", rec["outcome"], outcome(hand.card, dealer_card))
        differs(f"{where} decision", rec["decision"], hand.decision)
        differs(f"{where} war card", rec["war_card"], _text(hand.war_card))
        differs(f"{where} war outcome", rec["war_outcome"], war_outcome)
        differs(
            f"{where} wagers",
            {w["spot"]: w["amount"] for w in rec["wagers"]},
            spots(initial=hand.initial, tie=hand.tie, war=hand.war, war_tie=hand.war_tie),
        )
    return problems
