"""A simulated dealer and players at a :class:`~table_controller.rigs.rig.TableRig`.

:class:`Dealer` plays rounds the way people at a Casino War table do, through
the table's real parts only: players put chips on the sensor board, the dealer
presses the console's buttons and draws cards from the shoe, and everything
the controller says comes back over MQTT (the rig's observer). It is used by
``table-controller demo`` and may drive any rig.

The dealer knows every card it draws, so it knows the outcome of each hand
before the controller says it: it waits for the tie decision when there is a
tie, lets each tied player choose war or surrender, deals the war, and then
checks the published round record against what happened at the table (cards,
outcomes, decisions, wager amounts, the alerts it caused). What disagrees is
kept in :attr:`RoundPlayed.disagreements`.

It also makes the mistakes that a controller must catch, and resolves them as
a dealer would (GAME.md, "What the controller must catch"):

* a misread card (``MISREAD``): the dealer keys the card in, ``CARD,<card>``;
* a past-post, chips added to a playing initial wager after "no more bets"
  (§(g)(2); ``PAST_POSTING``): the chips are put back, then ``CONFIRM``.

Pace: :class:`Pace` gives a person's seconds per action; ``speed`` divides
them. Randomness (seats, wagers, decisions, mistakes, pauses) comes from one
seeded source, so a seed replays the same game.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from drivers.lineframe.cards import Card
from simulators.shoe import SimulatedRead
from table_controller.engine.rules import RulesProfile
from table_controller.feed.payloads import parse_payload
from table_controller.rigs.errors import DemoError
from table_controller.rigs.rig import SPOT_INITIAL, SPOT_TIE, SPOT_WAR, WAIT_S, Observer, TableRig

DEFAULT_DEALER_ID: Final = "D-101"

MISREAD: Final = "MISREAD"
PAST_POSTING: Final = "PAST_POSTING"


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


@dataclass(frozen=True, slots=True)
class _Hand:
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


def _outcome(player: Card, dealer: Card) -> str:
    # §(f): rank alone decides, ace high; the suit never counts.
    if player.rank > dealer.rank:
        return "win"
    return "lose" if player.rank < dealer.rank else "tie"


class Dealer:
    """Plays rounds at ``rig`` (whose controller must be running) as a dealer and players.

    ``seed`` makes the game repeatable; ``speed`` divides the :class:`Pace`;
    ``on_round`` is called with each round as soon as its record is checked.
    Every wait for the controller is bounded (``timeout_s``) and a missed one is
    a :class:`DemoError`.
    """

    def __init__(
        self,
        rig: TableRig,
        *,
        seed: int | None = None,
        speed: float = 1.0,
        habits: Habits | None = None,
        pace: Pace | None = None,
        dealer_id: str = DEFAULT_DEALER_ID,
        on_round: Callable[[RoundPlayed], None] | None = None,
        timeout_s: float = WAIT_S,
    ) -> None:
        if rig.config is None or rig.observer is None:
            raise ValueError("enter the rig (async with) before making its dealer")
        if not speed > 0:
            raise ValueError(f"speed must be above 0, not {speed}")
        self.rig = rig
        self.rules: RulesProfile = rig.config.rules
        self.positions = rig.config.table.positions
        self.speed = speed
        self.habits = habits or Habits()
        self.pace = pace or Pace()
        self.dealer_id = dealer_id
        self.on_round = on_round
        self.timeout_s = timeout_s
        self.tally = Tally()
        self.played: list[RoundPlayed] = []
        # A string seed, so the dealer's choices are not the shoe's shuffle.
        self._rng = random.Random(None if seed is None else f"dealer-{seed}")
        self._burn_due = False
        self._cover_seen = False
        self._alerts_taken: set[str] = set()
        self._caused: list[str] = []
        self._opened = False
        self._records_at_start = len(self.observer.of("rounds"))

    @property
    def observer(self) -> Observer:
        assert self.rig.observer is not None
        return self.rig.observer

    # -- the game ----------------------------------------------------------------------

    async def play(self, rounds: int | None = None) -> Tally:
        """Open the table if need be, then play ``rounds`` rounds (None: until cancelled)."""
        if not self._opened:
            await self.open_table()
        played = 0
        while rounds is None or played < rounds:
            await self.play_round()
            played += 1
        return self.tally

    async def open_table(self) -> None:
        """A new shoe and this dealer signing in: one burn card due (§(h)(1))."""

        def ready(obs: Observer) -> bool:
            status = obs.last("status")
            return bool(
                status
                and status["online"]
                and all(d["state"] == "ok" for d in status["devices"].values())
            )

        # A fresh table publishes no state before its first input: the status is enough.
        await self._wait(ready, "the table online with every device")
        await self._shuffle()
        await self._press("DEALER", self.dealer_id)
        self._burn_due = True
        self._opened = True

    async def play_round(self) -> RoundPlayed:
        """One round, from the first bet to its checked record."""
        state = await self._wait_state(
            lambda s: s["phase"] == "betting" and not s["held"] and not _wagers(s),
            "the table open for bets with an empty layout",
        )
        round_id: int = state["round_id"]
        records_before = len(self.observer.of("rounds"))
        self._caused = []
        hands = await self._take_bets()
        await self._pause(self.pace.notice_s)
        await self._press("NO_MORE_BETS")  # §(h)(2)
        if self._rng.random() < self.habits.past_post:
            await self._past_post(hands)

        # §(h)(3): one card to each playing position in order, then the dealer.
        if self._burn_due:
            await self._burn()
            self._burn_due = False
        for p, hand in hands.items():
            hands[p] = replace(hand, card=await self._deal())
        dealer_card = await self._deal()
        dealer_war_card: Card | None = None
        tied = [p for p, h in hands.items() if h.card and _outcome(h.card, dealer_card) == "tie"]
        if tied:
            await self._wait_state(
                lambda s: s["phase"] == "tie_decision" and not s["held"],
                f"the tie decision of round {round_id}",
            )
            for p in tied:
                hands[p] = await self._decide(hands[p])
            at_war = [p for p in tied if hands[p].decision == "war"]
            if at_war:
                # §(i)(5)(i): burn cards, one card per war position in order, the dealer's.
                for _ in range(self.rules.burn_before_war):
                    await self._burn()
                for p in at_war:
                    hands[p] = replace(hands[p], war_card=await self._deal())
                for _ in range(self.rules.burn_before_dealer_war):
                    await self._burn()
                dealer_war_card = await self._deal()

        record = await self._record(records_before, round_id)
        played = await self._check(
            record, round_id, list(hands.values()), dealer_card, dealer_war_card
        )
        self.played.append(played)
        self.tally = self.tally.add(played)
        if self.on_round is not None:
            self.on_round(played)
        await self._pause(self.pace.between_rounds_s)
        await self._clear_layout()
        if self._cover_seen:
            # §(h)(4): the round that met the cover card is complete: reshuffle.
            await self._wait_state(
                lambda s: s["phase"] == "shuffle_due", "the shuffle due after the cover card"
            )
            await self._pause(self.pace.between_rounds_s)
            self.rig.shoe.load()
            await self._shuffle()
        return played

    def take_unchecked(self) -> None:
        """Count the rounds recorded since this dealer began but not checked yet (a stop
        cut the dealer short), as they were published; ``on_round`` is called for each."""
        done = {p.round_id for p in self.played}
        codes = {m["alert"]: m["code"] for m in self.observer.of("alerts")}
        for record in self.observer.of("rounds")[self._records_at_start :]:
            if record["round_id"] in done:
                continue
            alert_codes = tuple(codes.get(a, "unknown") for a in record["alerts"])
            played = RoundPlayed(record["round_id"], record, alert_codes, (), ())
            self.played.append(played)
            self.tally = self.tally.add(played)
            if self.on_round is not None:
                self.on_round(played)

    # -- the players -------------------------------------------------------------------

    async def _take_bets(self) -> dict[int, _Hand]:
        rng, habits = self._rng, self.habits
        seats = [p for p in range(1, self.positions + 1) if rng.random() < habits.seat_taken]
        if not seats:
            seats = [rng.randint(1, self.positions)]
        hands: dict[int, _Hand] = {}
        for position in seats:
            tie = rng.choice(habits.tie_chips) if rng.random() < habits.tie_bet else None
            hand = _Hand(position, rng.choice(habits.initial_chips), tie)
            await self._pause(self.pace.bet_s)
            self.rig.bet(position, initial=hand.initial, tie=hand.tie)
            hands[position] = hand
        layout = {p: _spots(initial=h.initial, tie=h.tie) for p, h in hands.items()}
        try:
            await self.rig.wait_wagers(layout)
        except TimeoutError as exc:
            raise DemoError(f"the controller did not show the wagers {layout}: {exc}") from exc
        return hands

    async def _past_post(self, hands: Mapping[int, _Hand]) -> None:
        """Chips added after "no more bets" (§(g)(2)); the dealer has them put back."""
        hand = hands[self._rng.choice(sorted(hands))]
        extra = self._rng.choice(self.habits.initial_chips)
        await self._pause(self.pace.bet_s)
        self.rig.bet(hand.position, initial=hand.initial + extra, tie=hand.tie)
        await self._alert(PAST_POSTING)
        await self._pause(self.pace.notice_s)
        # GAME.md: a confirmed past-post settles at the latched amount; the chips go back.
        self.rig.bet(hand.position, initial=hand.initial, tie=hand.tie)
        await self._wait_position(hand.position, _spots(initial=hand.initial, tie=hand.tie))
        await self._press("CONFIRM")

    async def _decide(self, hand: _Hand) -> _Hand:
        """§(i)(3): surrender half the initial wager, or go to war with an equal war wager."""
        await self._pause(self.pace.decision_s)
        if self._rng.random() >= self.habits.goes_to_war:
            await self._press("SURRENDER", hand.position)
            return replace(hand, decision="surrender")
        # §(i)(5): the dealer offers a tie wager on the war deal (where the rules have it);
        # chips left on the tie spot at the decision are that wager. Elsewhere the tie
        # spot is cleared once the original tie wager is settled.
        tie_spot: int | None = None
        if self.rules.war_tie_wager_allowed and self._rng.random() < self.habits.war_tie_bet:
            tie_spot = hand.tie if hand.tie is not None else self._rng.choice(self.habits.tie_chips)
        # GAME.md: the war wager equals the initial wager.
        hand = replace(hand, decision="war", war=hand.initial, war_tie=tie_spot)
        self.rig.bet(hand.position, initial=hand.initial, tie=tie_spot, war=hand.war)
        await self._wait_position(
            hand.position, _spots(initial=hand.initial, tie=tie_spot, war=hand.war)
        )
        await self._press("WAR", hand.position)
        return hand

    async def _clear_layout(self) -> None:
        """Losing chips collected, winnings paid and picked up: every spot empty."""
        self.rig.board.set_spots(
            {
                (p, spot): None
                for p in range(1, self.positions + 1)
                for spot in (SPOT_INITIAL, SPOT_TIE, SPOT_WAR)
            }
        )
        await self._wait_state(lambda s: not _wagers(s), "an empty layout")

    # -- the dealer --------------------------------------------------------------------

    async def _shuffle(self) -> None:
        await self._press("SHUFFLED")
        self._cover_seen = False
        self._burn_due = True  # §(h)(1)

    async def _draw(self, *, misread: bool) -> SimulatedRead:
        """The next card out of the shoe; the cover card is set aside and noted (§(h)(4))."""
        while True:
            await self._pause(self.pace.card_s)
            read = self.rig.shoe.draw(misread=misread)
            if read.card is not None:
                return read
            self._cover_seen = True

    async def _burn(self) -> None:
        # Never a misread: §(h)(1) forbids showing a burn card's rank to anyone.
        await self._draw(misread=False)

    async def _deal(self) -> Card:
        misread = self._rng.random() < self.habits.misread
        read = await self._draw(misread=misread)
        assert read.card is not None
        if misread:
            await self._alert(MISREAD)
            await self._pause(self.pace.notice_s)
            await self._press("CARD", str(read.card))
        return read.card

    async def _press(self, action: str, arg: str | int | None = None) -> None:
        try:
            nak = await self.rig.press(action, arg)
        except TimeoutError as exc:
            raise DemoError(f"the console's {action} press got no answer") from exc
        if nak is not None:
            what = action if arg is None else f"{action},{arg}"
            raise DemoError(f"the controller refused {what}: {nak}; {self.observer.summary()}")

    # -- what the controller says --------------------------------------------------------

    async def _wait(self, predicate: Callable[[Observer], bool], what: str) -> None:
        try:
            await self.rig.wait(predicate, self.timeout_s)
        except TimeoutError as exc:
            raise DemoError(f"waited for {what}: {exc}") from exc

    async def _wait_state(
        self, predicate: Callable[[dict[str, Any]], bool], what: str
    ) -> dict[str, Any]:
        def ok(obs: Observer) -> bool:
            state = obs.last("state")
            return state is not None and predicate(state)

        await self._wait(ok, what)
        state = self.observer.last("state")
        assert state is not None
        return state

    async def _wait_position(self, position: int, wagers: Mapping[str, int]) -> None:
        def shows(state: dict[str, Any]) -> bool:
            live = _wagers(state).get(position, {})
            return all(live.get(spot) == cents for spot, cents in wagers.items()) and all(
                spot in wagers for spot in live if spot != "war_tie"
            )

        await self._wait_state(shows, f"P{position} showing {dict(wagers)}")

    async def _alert(self, code: str) -> dict[str, Any]:
        """Wait for the alert this table's people just caused; note it as caused."""
        found: list[dict[str, Any]] = []

        def raised(obs: Observer) -> bool:
            for msg in obs.of("alerts"):
                if (
                    msg["code"] == code
                    and msg["resolved_by"] is None
                    and msg["alert"] not in self._alerts_taken
                ):
                    found.append(msg)
                    return True
            return False

        await self._wait(raised, f"a {code} alert")
        alert = found[0]
        self._alerts_taken.add(alert["alert"])
        self._caused.append(code)
        return alert

    async def _record(self, records_before: int, round_id: int) -> dict[str, Any]:
        await self._wait(
            lambda o: len(o.of("rounds")) > records_before, f"the record of round {round_id}"
        )
        record = self.observer.of("rounds")[records_before]
        ids = set(record["alerts"])

        def alerts_known(obs: Observer) -> bool:
            return ids <= {m["alert"] for m in obs.of("alerts")}

        # The alerts topic and the rounds topic may arrive in either order.
        await self._wait(alerts_known, f"the alerts of round {round_id}")
        return record

    async def _check(
        self,
        record: dict[str, Any],
        round_id: int,
        hands: list[_Hand],
        dealer_card: Card,
        dealer_war_card: Card | None,
    ) -> RoundPlayed:
        codes = {m["alert"]: m["code"] for m in self.observer.of("alerts")}
        alert_codes = tuple(codes[a] for a in record["alerts"])
        caused = tuple(self._caused)
        problems: list[str] = []
        try:
            parse_payload(record)
        except ValueError as exc:
            problems.append(f"the record does not validate: {exc}")
        problems += _compare(record, round_id, hands, dealer_card, dealer_war_card)
        missing = Counter(caused) - Counter(alert_codes)
        if missing:
            problems.append(f"alerts caused but not recorded: {sorted(missing.elements())}")
        return RoundPlayed(round_id, record, alert_codes, caused, tuple(problems))

    async def _pause(self, seconds: float) -> None:
        delay = seconds * self._rng.uniform(0.6, 1.4) / self.speed
        await asyncio.sleep(delay if delay > 0.0005 else 0)

    # -- the table's own figures ---------------------------------------------------------

    async def check_stats(self, since: datetime) -> tuple[str, ...]:
        """Compare the table's ``stats`` (published at or after ``since``) with the tally.

        The controller counts on its own (``table-stats/1``); what differs from the
        round records is returned, one line per figure.
        """
        tally = self.tally
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
            await self.rig.wait(current, self.timeout_s)
        except TimeoutError:
            return (f"the table's stats never showed {tally.rounds} rounds",)
        stats = found[0]
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


def _spots(**amounts: int | None) -> dict[str, int]:
    return {spot: cents for spot, cents in amounts.items() if cents is not None}


def _wagers(state: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["position"]: p["wagers"] for p in state["positions"] if p["wagers"]}


def _text(card: Card | None) -> str | None:
    return None if card is None else str(card)


def _compare(
    record: Mapping[str, Any],
    round_id: int,
    hands: list[_Hand],
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
            war_outcome = _outcome(hand.war_card, dealer_war_card)
        differs(f"{where} card", rec["card"], str(hand.card))
        differs(f"{where} outcome", rec["outcome"], _outcome(hand.card, dealer_card))
        differs(f"{where} decision", rec["decision"], hand.decision)
        differs(f"{where} war card", rec["war_card"], _text(hand.war_card))
        differs(f"{where} war outcome", rec["war_outcome"], war_outcome)
        differs(
            f"{where} wagers",
            {w["spot"]: w["amount"] for w in rec["wagers"]},
            _spots(initial=hand.initial, tie=hand.tie, war=hand.war, war_tie=hand.war_tie),
        )
    return problems
