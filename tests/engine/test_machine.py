"""Whole shoes played at random (hypothesis RuleBasedStateMachine) under the table's invariants.

Random wagers, decisions, misreads, foreign cards, covers, past-posts, sensor
faults, device drops, board reconnects, value-less and partial snapshots, shoe
faults, repeated presses and voids. The invariants checked after every input, and
the journal's replay at the end, are tests/engine/machine_checks.py's.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from table_controller.engine import (
    DECK,
    CardRead,
    ConsolePress,
    ConsoleReply,
    CoverRead,
    DeviceOffline,
    DeviceOnline,
    Misread,
    Phase,
    PressesRenumbered,
    PublishRefused,
    ReadGap,
    RoundEngine,
    ShoeStatus,
    SpotsChanged,
    TableSetup,
    Tick,
)
from table_controller.engine.rules import NY, STANDARD, UK

from .machine_checks import SHOWN, TableChecks

PROFILES = {"ny": NY, "uk": UK, "standard": STANDARD}

ACTIONS = ["SHUFFLED", "NO_MORE_BETS", "CONFIRM", "VOID_ROUND", "BOGUS"]


class TableMachine(TableChecks):
    """What a table goes through: the dealer's presses, the shoe's reads, the chips on
    the layout, its devices and the broker."""

    # ------------------------------------------------------------ set-up

    @initialize(
        profile=st.sampled_from(sorted(PROFILES)),
        decks=st.integers(1, 2),
        positions=st.integers(1, 7),
        rfid=st.booleans(),
        seed=st.integers(0, 2**32 - 1),
    )
    def setup_table(self, profile: str, decks: int, positions: int, rfid: bool, seed: int) -> None:
        self.setup = TableSetup(PROFILES[profile], decks, positions)
        self.engine = RoundEngine(self.setup)
        self.state = self.engine.snapshot()
        self.rng = random.Random(seed)
        self.rfid = rfid
        self.feed(DeviceOnline(self.at(), "shoe"))
        self.feed(DeviceOnline(self.at(), "sensors"))
        self.shuffle()

    # ------------------------------------------------------------ the dealer

    def press(self, action: str, arg: str | None = None) -> str | None:
        self.k += 1
        out = self.feed(ConsolePress(self.at(), self.k, action, arg))
        (reply,) = [o for o in out if isinstance(o, ConsoleReply)]
        return reply.reason

    @rule()
    def shuffle(self) -> None:
        if self.press("SHUFFLED") is None:
            self.shoe = list(DECK) * self.setup.decks
            self.rng.shuffle(self.shoe)
            self.cover_at = int(len(self.shoe) * 0.25)

    @rule(dealer=st.sampled_from(["D-1", "D-2", ""]))
    def dealer(self, dealer: str) -> None:
        self.press("DEALER", dealer)

    @rule(action=st.sampled_from(ACTIONS))
    def button(self, action: str) -> None:
        self.press(action)

    @rule(data=st.data())
    def decide(self, data: st.DataObject) -> None:
        tied = [h.position for h in self.state.round.hands if h.outcome is not None]
        position = data.draw(st.sampled_from([*tied, 0, 9]))
        action = data.draw(st.sampled_from(["WAR", "SURRENDER"]))
        self.press(action, str(position))

    @precondition(lambda self: self.state.phase is Phase.TIE_DECISION)
    @rule(go_to_war=st.booleans())
    def everybody_decides(self, go_to_war: bool) -> None:
        for h in self.state.round.hands:
            if h.outcome is not None and h.outcome.value == "tie" and h.decision is None:
                if go_to_war:
                    self.set_spot(h.position, 2, 500)
                self.press("WAR" if go_to_war else "SURRENDER", str(h.position))

    @rule(card=st.sampled_from(DECK) | st.sampled_from(["", "1X", "as"]))
    def key_in_card(self, card: str) -> None:
        self.press("CARD", card)

    @rule()
    def repeat_last_press(self) -> None:
        if self.k:
            self.feed(ConsolePress(self.at(), self.k, "VOID_ROUND", None))

    @rule()
    def console_restarts(self) -> None:
        self.feed(PressesRenumbered(self.at()))
        self.k = 0

    # ------------------------------------------------------------ the shoe

    def draw(self) -> None:
        if not self.shoe:
            return
        if len(self.shoe) == self.cover_at:
            self.n += 1
            self.feed(CoverRead(self.at(), self.n))
        self.n += 1
        self.feed(CardRead(self.at(), self.n, self.shoe.pop()))

    @rule(count=st.integers(1, 12))
    def deal(self, count: int) -> None:
        for _ in range(count):
            self.draw()

    @rule()
    def play_round(self) -> None:
        """A whole round the usual way: no more bets, cards until it settles or stalls."""
        self.press("NO_MORE_BETS")
        for _ in range(30):
            if self.state.phase in (Phase.BETTING, Phase.SHUFFLE_DUE, Phase.TIE_DECISION):
                break
            if self.state.held:
                self.press("CONFIRM")
            self.draw()

    def resolve_hold(self) -> None:
        """The dealer clears a hold: confirm, key in a misread card, or void."""
        if not self.state.held:
            return
        if self.press("CONFIRM") is None and not self.state.held:
            return
        if any(c.pending for c in self.state.round.cards):
            self.press("CARD", self.rng.choice(DECK))
        if self.state.held:
            self.press("VOID_ROUND")

    @rule(count=st.integers(1, 8), seed=st.integers(0, 2**16))
    def play_rounds(self, count: int, seed: int) -> None:
        """Whole rounds as a dealer plays them, with random wagers and decisions."""
        rng = random.Random(seed)
        for _ in range(count):
            if self.state.phase is Phase.SHUFFLE_DUE or not self.shoe:
                self.shuffle()
            self.resolve_hold()
            if self.state.round.latched:
                self.press("VOID_ROUND")
            for p in range(1, self.setup.positions + 1):
                initial = rng.choice([None, 500, 501, 2500, 333])
                self.set_spot(p, 0, initial)
                self.set_spot(p, 1, rng.choice([None, None, 100]))
                self.set_spot(p, 2, None)
            if not self.present & 0o1111111:
                self.set_spot(1, 0, 500)
            if rng.random() < 0.8:
                self.press("NO_MORE_BETS")
            for _ in range(40):
                phase = self.state.phase
                rnd = self.state.round
                dealing = phase in (Phase.DEALING, Phase.WAR_DEALING)
                if not rnd.latched or (dealing and rnd.plan_i < len(rnd.plan)):
                    # Cards keep coming while held: a disruption mid-deal is
                    # resolved only once the dealer cannot go on.
                    roll = rng.random()
                    if roll < 0.05 and rnd.hands:
                        h = rng.choice(rnd.hands)
                        self.set_spot(h.position, rng.choice([0, 1]), rng.choice([None, 9999]))
                    elif roll < 0.08:
                        self.misread()
                        continue
                    if not self.shoe:
                        break
                    self.draw()
                elif self.state.held:
                    self.resolve_hold()
                elif phase is Phase.TIE_DECISION:
                    for h in rnd.hands:
                        if h.outcome is not None and h.outcome.value == "tie":
                            if rng.random() < 0.7:
                                amount = rng.choice([500, 501, 2500, None])
                                self.set_spot(h.position, 2, amount)
                                self.press("WAR", str(h.position))
                            else:
                                self.press("SURRENDER", str(h.position))
                if self.state.phase in (Phase.BETTING, Phase.SHUFFLE_DUE) and not (
                    self.state.round.latched
                ):
                    break

    @rule()
    def misread(self) -> None:
        self.n += 1
        self.feed(Misread(self.at(), self.n))

    @rule(card=st.sampled_from(DECK))
    def foreign_card(self, card: str) -> None:
        self.n += 1
        self.feed(CardRead(self.at(), self.n, card))

    @rule()
    def repeated_read(self) -> None:
        if self.n:
            self.feed(CardRead(self.at(), self.n, "AS"))

    @rule()
    def read_gap(self) -> None:
        self.feed(ReadGap(self.at(), self.n + 1, "resend_timeout"))
        self.n += 1  # the driver gave up on one read number

    # ------------------------------------------------------------ the layout

    def snapshot(self, *, without: frozenset[int] = frozenset(), valueless: bool = False) -> None:
        """Send the layout; ``without`` the values of those bits, or ``valueless`` at all."""
        values: tuple[tuple[int, int], ...] | None = None
        if self.rfid and not valueless:
            values = tuple(sorted((b, c) for b, c in self.values.items() if b not in without))
        self.sent = {}
        for b in range(21):
            if (self.present >> b) & 1:
                known = dict(values) if values is not None else {}
                self.sent[b] = known.get(b, SHOWN) if self.rfid else SHOWN
        self.feed(SpotsChanged(self.at(), self.present, self.fault, values))

    def set_spot(self, position: int, spot: int, cents: int | None) -> None:
        bit = (position - 1) * 3 + spot
        if cents is None:
            self.present &= ~(1 << bit)
            self.values.pop(bit, None)
        else:
            self.present |= 1 << bit
            self.values[bit] = cents
        self.snapshot()

    @rule(
        position=st.integers(1, 7),
        spot=st.integers(0, 2),
        cents=st.none() | st.sampled_from([100, 500, 2501, 100001]),
    )
    def chips(self, position: int, spot: int, cents: int | None) -> None:
        self.set_spot(position, spot, cents)

    @rule(data=st.data())
    def place_bets(self, data: st.DataObject) -> None:
        for p in range(1, self.setup.positions + 1):
            self.set_spot(p, 0, data.draw(st.none() | st.just(500), label=f"initial {p}"))
            self.set_spot(p, 1, data.draw(st.none() | st.just(100), label=f"tie {p}"))

    @rule()
    def valueless_snapshot(self) -> None:
        """A snapshot without values, as the board's first heartbeat after a reconnect."""
        self.snapshot(valueless=True)

    @rule(data=st.data())
    def partial_snapshot(self, data: st.DataObject) -> None:
        """A snapshot missing some of the values it should carry."""
        if not self.values:
            return
        missing = data.draw(st.sets(st.sampled_from(sorted(self.values)), min_size=1))
        self.snapshot(without=frozenset(missing))

    @rule(swap=st.none() | st.sampled_from([100, 500, 2500, 50000]), data=st.data())
    def board_reconnects(self, swap: int | None, data: st.DataObject) -> None:
        """The board drops, chips may change meanwhile, it comes back and reports."""
        self.feed(DeviceOffline(self.at(), "sensors", "link closed"))
        if self.values and swap is not None:
            bit = data.draw(st.sampled_from(sorted(self.values)))
            self.values[bit] = swap
        self.feed(DeviceOnline(self.at(), "sensors"))
        self.snapshot(valueless=True)
        self.snapshot()

    @rule(state=st.sampled_from(["OK", "DOOR_OPEN", "JAM", "FAULT", "OK"]))
    def shoe_reports(self, state: str) -> None:
        self.feed(ShoeStatus(self.at(), state))

    @rule(bit=st.integers(0, 20), on=st.booleans())
    def sensor_fault(self, bit: int, on: bool) -> None:
        self.fault = self.fault | (1 << bit) if on else self.fault & ~(1 << bit)
        self.snapshot()

    # ------------------------------------------------------------ devices and broker

    @rule(device=st.sampled_from(["shoe", "console", "sensors"]), online=st.booleans())
    def device(self, device: Any, online: bool) -> None:
        if online:
            self.feed(DeviceOnline(self.at(), device))
        else:
            self.feed(DeviceOffline(self.at(), device, "link closed"))

    @rule(topic=st.sampled_from(["t/alerts", "t/events"]))
    def broker_refuses(self, topic: str) -> None:
        self.feed(PublishRefused(self.at(), topic, 0x87, f"m{self.ticks}"))

    @rule()
    def tick(self) -> None:
        self.feed(Tick(self.at()))


TableMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestTableMachine = TableMachine.TestCase
