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
a dealer would (docs/rules.md, "What the controller must catch"):

* a misread card (``MISREAD``): the dealer keys the card in, ``CARD,<card>``;
* a past-post, chips added to a playing initial wager after "no more bets"
  (§(g)(2); ``PAST_POSTING``): the chips are put back, then ``CONFIRM``.

Pace: :class:`Pace` gives a person's seconds per action; ``speed`` divides
them. Randomness (seats, wagers, decisions, mistakes, pauses) comes from one
seeded source, so a seed replays the same game.

It is also the benchmarks' dealer: with :meth:`Pace.instant`, habits that seat
every position with fixed chips and make no mistakes, and ``on_draw`` (awaited
with the clocks read just before each card passes the reader), it plays rounds
as fast as the table takes them.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from drivers.lineframe.cards import Card
from simulators.shoe import SimulatedRead
from table_controller.engine.rules import RulesProfile
from table_controller.feed.payloads import parse_payload
from table_controller.rigs.errors import DemoError
from table_controller.rigs.people import Habits, Pace
from table_controller.rigs.rig import SPOT_INITIAL, SPOT_TIE, SPOT_WAR, WAIT_S, Observer, TableRig
from table_controller.rigs.tally import (
    Hand,
    RoundPlayed,
    Tally,
    compare_record,
    outcome,
    spots,
    wagers_of,
)
from table_controller.rigs.watch import TableWatch

OnDraw = Callable[[int, float], Awaitable[None]]
"""Awaited with ``time.perf_counter_ns()`` and ``time.time()`` read just before a card's
draw, once the card (not the cover card) has passed the reader."""

DEFAULT_DEALER_ID: Final = "D-101"

MISREAD: Final = "MISREAD"
PAST_POSTING: Final = "PAST_POSTING"


class Dealer:
    """Plays rounds at ``rig`` (whose controller must be running) as a dealer and players.

    ``seed`` makes the game repeatable; ``speed`` divides the :class:`Pace`;
    ``on_round`` is called with each round as soon as its record is checked;
    ``on_draw`` (:data:`OnDraw`) is awaited for every card drawn.
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
        on_draw: OnDraw | None = None,
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
        self.on_draw = on_draw
        self.watch = TableWatch(rig.observer, timeout_s)
        self.tally = Tally()
        self.cards = 0
        """Cards dealt or burnt (the cover card not counted)."""
        self.shoes = 0
        """New shoes started (``SHUFFLED``)."""
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
        await self.watch.wait(ready, "the table online with every device")
        await self._shuffle()
        await self._press("DEALER", self.dealer_id)
        self._burn_due = True
        self._opened = True

    async def play_round(self) -> RoundPlayed:
        """One round, from the first bet to its checked record."""
        state = await self.watch.state(
            lambda s: s["phase"] == "betting" and not s["held"] and not wagers_of(s),
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
        tied = [p for p, h in hands.items() if h.card and outcome(h.card, dealer_card) == "tie"]
        if tied:
            await self.watch.state(
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

        record = await self.watch.record(records_before, round_id)
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
            await self.watch.state(
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

    async def _take_bets(self) -> dict[int, Hand]:
        rng, habits = self._rng, self.habits
        seats = [p for p in range(1, self.positions + 1) if rng.random() < habits.seat_taken]
        if not seats:
            seats = [rng.randint(1, self.positions)]
        hands: dict[int, Hand] = {}
        for position in seats:
            tie = rng.choice(habits.tie_chips) if rng.random() < habits.tie_bet else None
            hand = Hand(position, rng.choice(habits.initial_chips), tie)
            await self._pause(self.pace.bet_s)
            self.rig.bet(position, initial=hand.initial, tie=hand.tie)
            hands[position] = hand
        layout = {p: spots(initial=h.initial, tie=h.tie) for p, h in hands.items()}
        try:
            await self.rig.wait_wagers(layout)
        except TimeoutError as exc:
            raise DemoError(f"the controller did not show the wagers {layout}: {exc}") from exc
        return hands

    async def _past_post(self, hands: Mapping[int, Hand]) -> None:
        """Chips added after "no more bets" (§(g)(2)); the dealer has them put back."""
        hand = hands[self._rng.choice(sorted(hands))]
        extra = self._rng.choice(self.habits.initial_chips)
        await self._pause(self.pace.bet_s)
        self.rig.bet(hand.position, initial=hand.initial + extra, tie=hand.tie)
        await self._alert(PAST_POSTING)
        await self._pause(self.pace.notice_s)
        # docs/rules.md: a confirmed past-post settles at the latched amount; the chips go back.
        self.rig.bet(hand.position, initial=hand.initial, tie=hand.tie)
        await self.watch.position(hand.position, spots(initial=hand.initial, tie=hand.tie))
        await self._press("CONFIRM")

    async def _decide(self, hand: Hand) -> Hand:
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
        # docs/rules.md: the war wager equals the initial wager.
        hand = replace(hand, decision="war", war=hand.initial, war_tie=tie_spot)
        self.rig.bet(hand.position, initial=hand.initial, tie=tie_spot, war=hand.war)
        await self.watch.position(
            hand.position, spots(initial=hand.initial, tie=tie_spot, war=hand.war)
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
        await self.watch.state(lambda s: not wagers_of(s), "an empty layout")

    # -- the dealer --------------------------------------------------------------------

    async def _shuffle(self) -> None:
        await self._press("SHUFFLED")
        self.shoes += 1
        self._cover_seen = False
        self._burn_due = True  # §(h)(1)

    async def _draw(self, *, misread: bool) -> SimulatedRead:
        """The next card out of the shoe; the cover card is set aside and noted (§(h)(4))."""
        while True:
            await self._pause(self.pace.card_s)
            start, wall = time.perf_counter_ns(), time.time()
            read = self.rig.shoe.draw(misread=misread)
            if read.card is not None:
                self.cards += 1
                if self.on_draw is not None:
                    await self.on_draw(start, wall)
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

    async def _alert(self, code: str) -> None:
        """Wait for the alert this table's people just caused; note it as caused."""
        await self.watch.new_alert(code, self._alerts_taken)
        self._caused.append(code)

    async def _check(
        self,
        record: dict[str, Any],
        round_id: int,
        hands: list[Hand],
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
        problems += compare_record(record, round_id, hands, dealer_card, dealer_war_card)
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
        return await self.watch.stats_against(self.tally, since)
