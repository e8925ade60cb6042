"""Whole shoes played at random (hypothesis RuleBasedStateMachine) under the table's invariants.

Random wagers, decisions, misreads, foreign cards, covers, past-posts, sensor
faults, device drops, board reconnects, value-less and partial snapshots, shoe
faults, repeated presses and voids. After every input:

- every card read is accounted for exactly once: in a round record, in the
  round in progress (dealt, burned or pending), or set aside as unexpected;
- nothing is settled while a critical alert is open;
- each wager's net is amount × net_per_unit (surrender: -(amount - amount // 2));
- Event seq rises by exactly 1; each press gets exactly one answer;
- the views are JSON; no input raises;
- no wager is settled at an amount other than the one the sensors showed at
  its latch (the WAR press for a war wager), and when a deal completes with a
  wager's spot showing anything else, the dealer has confirmed a critical
  alert about that wager (docs/rules.md "latched amount", §(g)(2)).

At the end the journal replays to the identical state and outputs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from table_controller.engine import (
    DECK,
    CardRead,
    ConsolePress,
    ConsoleReply,
    CoverRead,
    DeviceOffline,
    DeviceOnline,
    EngineSnapshot,
    Event,
    Input,
    Misread,
    Output,
    Phase,
    PressesRenumbered,
    PublishRefused,
    ReadGap,
    RoundEngine,
    RoundRecorded,
    ShoeStatus,
    SpotsChanged,
    TableSetup,
    Tick,
    device_states,
    replay,
    state_view,
    stats_view,
)
from table_controller.engine.rules import NY, STANDARD, UK
from table_controller.feed.bodies import record_body

from .helpers import T0

PROFILES = {"ny": NY, "uk": UK, "standard": STANDARD}
# A spot the board reports as occupied without a value.
SHOWN = "chips"


def d_pos(event: Event) -> set[int]:
    """The playing positions of a ``bets_closed`` event."""
    return set(event.data["positions"])


ACTIONS = ["SHUFFLED", "NO_MORE_BETS", "CONFIRM", "VOID_ROUND", "BOGUS"]


class TableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.setup = TableSetup(NY, 6, 7)
        self.engine = RoundEngine(self.setup)
        self.state: EngineSnapshot = self.engine.snapshot()
        self.inputs: list[Input] = []
        self.outputs: list[Output] = []
        self.ticks = 0
        self.k = 0
        self.n = 0
        self.seq = 0
        self.rng = random.Random(0)
        self.shoe: list[str] = []
        self.cover_at = 0
        self.present = 0
        self.fault = 0
        self.values: dict[int, int] = {}
        self.rfid = True
        self.taken: list[int] = []
        self.done: list[int] = []
        # What the last snapshot sent showed per spot bit: cents, or SHOWN for
        # chips without a value; absent when empty.
        self.sent: dict[int, int | str] = {}
        # What the sensors showed at each wager's latch, by spot bit.
        self.at_latch: dict[int, int | str] = {}
        # Every alert raised: id -> (code, position, spot); and those the dealer confirmed.
        self.alert_about: dict[str, tuple[str, int | None, str | None]] = {}
        self.confirmed: set[str] = set()

    # ------------------------------------------------------------ plumbing

    def at(self) -> Any:
        from datetime import timedelta

        self.ticks += 1
        return T0 + timedelta(seconds=self.ticks)

    def feed(self, inp: Input) -> list[Output]:
        before = self.state
        if isinstance(inp, CardRead | Misread) and inp.n > before.last_read_n:
            self.taken.append(inp.n)
        elif isinstance(inp, ReadGap) and inp.reason == "resend_timeout":
            # A read the shoe driver gave up on still left the shoe: it is taken unseen.
            last = inp.last_missing if inp.last_missing is not None else inp.first_missing
            self.taken.extend(range(max(inp.first_missing, before.last_read_n + 1), last + 1))
        out = self.engine.feed(inp)
        after = self.engine.snapshot()
        self._check_latched_amounts(before, after, out)
        self.inputs.append(inp)
        self.outputs.extend(out)
        self._check_step(before, after, inp, out)
        self.state = after
        return out

    def _check_step(
        self, before: EngineSnapshot, after: EngineSnapshot, inp: Input, out: list[Output]
    ) -> None:
        replies = [o for o in out if isinstance(o, ConsoleReply)]
        if isinstance(inp, ConsolePress):
            assert [r.k for r in replies] == [inp.k]
        else:
            assert replies == []
        # Event seq rises by exactly one, across the whole history.
        open_ids = {a.alert for a in before.alerts.open}
        for o in out:
            if isinstance(o, Event):
                assert o.seq == self.seq + 1
                self.seq = o.seq
                assert o.at == inp.at
                json.dumps(o.data)
                if o.type == "alert":
                    event(f"alert {o.data['code']} {o.data['resolved_by']}")
                    if o.data["resolved_by"] is None:
                        if o.data["severity"] == "critical":
                            open_ids.add(o.data["alert"])
                    else:
                        assert o.data["alert"] in open_ids
                        open_ids.discard(o.data["alert"])
                if o.type == "reshuffle_due":
                    event("played a shoe to its cover card")
                if o.type == "card" and o.data["role"] in ("burn", "war_burn"):
                    assert o.data["card"] is None, "§(h)(1): no burn rank on live feeds"
            elif isinstance(o, RoundRecorded):
                record = record_body(o.record)
                json.dumps(record)
                if not record["void"]:
                    assert not open_ids, "settled while a critical alert was open"
                self._check_record(record)
                event("void round" if record["void"] else "settled round")
                if any(p["decision"] == "war" for p in record["positions"]):
                    event("settled a war")
                self.done.extend(c["n"] for c in record["cards"])
                self.done.extend(n for n, _ in before.round.discards)
        assert open_ids == {a.alert for a in after.alerts.open}
        assert after.held == bool(open_ids)

    def _check_latched_amounts(
        self, before: EngineSnapshot, after: EngineSnapshot, out: list[Output]
    ) -> None:
        """The invariant of docs/rules.md's latched comparisons (see the module docstring)."""
        for o in out:
            if not isinstance(o, Event):
                continue
            if o.type == "alert":
                d = o.data
                self.alert_about.setdefault(d["alert"], (d["code"], d["position"], d["spot"]))
                if d["resolved_by"] == "CONFIRM":
                    self.confirmed.add(d["alert"])
            elif o.type == "bets_closed":
                self.at_latch = {
                    b: v for b, v in self.sent.items() if b % 3 != 2 and b // 3 + 1 in d_pos(o)
                }
            elif o.type == "decision" and o.data["decision"] == "war":
                war = (o.data["position"] - 1) * 3 + 2
                if war in self.sent:
                    self.at_latch[war] = self.sent[war]
        records = [o.record for o in out if isinstance(o, RoundRecorded)]
        settled = [r for r in records if not r.void]
        original_done = before.phase is Phase.DEALING and (
            after.phase is Phase.TIE_DECISION or bool(settled)
        )
        if original_done:
            alert_ids = set(after.round.alert_ids) | {a for r in records for a in r.alerts}
            for h in before.round.hands:
                if h.skipped:
                    continue
                spots = [0, 1] if h.tie is not None else [0]
                for spot in spots:
                    self._vouched(h.position, spot, alert_ids)
        for r in settled:
            for pos in r.positions:
                for w in pos.wagers:
                    kind = {"initial": 0, "tie": 1, "war": 2}.get(w.spot.value)
                    if kind is None or w.result.value == "void" or w.amount is None:
                        continue
                    shown = self.at_latch.get((pos.position - 1) * 3 + kind)
                    assert w.amount == shown, (
                        f"P{pos.position} {w.spot.value} settled at {w.amount}, "
                        f"the sensors showed {shown} at its latch"
                    )

    def _vouched(self, position: int, spot: int, alert_ids: set[str]) -> None:
        """A wager whose spot differs from its latch now has a confirmed critical alert."""
        bit = (position - 1) * 3 + spot
        if self.sent.get(bit) == self.at_latch.get(bit):
            return
        names = {0: "initial", 1: "tie", 2: "war"}
        about = [
            a
            for a in alert_ids & self.confirmed
            if self.alert_about.get(a, ("", None, None))[1:] == (position, names[spot])
        ]
        assert about, (
            f"P{position} {names[spot]} shows {self.sent.get(bit)} at settlement, "
            f"{self.at_latch.get(bit)} at its latch, and no confirmed alert about it"
        )

    def _check_record(self, record: Mapping[str, Any]) -> None:
        total = 0
        known = True
        for pos in record["positions"]:
            pos_total = 0
            for w in pos["wagers"]:
                amount, npu, net = w["amount"], w["net_per_unit"], w["net"]
                if amount is None:
                    assert net is None
                    known = False
                    continue
                if w["result"] == "surrender":
                    assert net == -(amount - amount // 2)
                elif w["result"] == "void":
                    assert (npu, net) == (0, 0)
                else:
                    assert net == amount * Fraction(npu)
                pos_total += net
            if pos["net"] is not None:
                assert pos["net"] == pos_total
                total += pos_total
        if known:
            assert record["net"] == total
        else:
            assert record["net"] is None

    @invariant()
    def every_read_is_accounted_for_once(self) -> None:
        rnd = self.state.round
        placed = self.done + [c.n for c in rnd.cards] + [n for n, _ in rnd.discards]
        assert sorted(placed) == sorted(self.taken)
        assert len(set(placed)) == len(placed)

    @invariant()
    def phase_agrees_with_the_round(self) -> None:
        state = self.state
        in_round = state.phase in (Phase.DEALING, Phase.TIE_DECISION, Phase.WAR_DEALING)
        assert in_round == state.round.latched
        if state.phase is not Phase.SHUFFLE_DUE:
            assert state.shoe.id is not None
        if state.phase is Phase.TIE_DECISION:
            assert any(h.outcome is not None for h in state.round.hands)

    @invariant()
    def views_are_json(self) -> None:
        json.dumps(state_view(self.state))
        json.dumps(stats_view(self.state))
        json.dumps(device_states(self.state))

    def teardown(self) -> None:
        engine, outputs = replay(self.setup, self.inputs)
        assert engine.snapshot() == self.state
        assert outputs == self.outputs
        # A checkpoint midway, through its JSON form, carries on to the same table.
        half = len(self.inputs) // 2
        midway, _ = replay(self.setup, self.inputs[:half])
        text = json.dumps(midway.snapshot().to_json())
        start = EngineSnapshot.from_json(json.loads(text))
        rest, rest_out = replay(self.setup, self.inputs[half:], start=start)
        assert rest.snapshot() == self.state
        assert rest_out == self.outputs[len(self.outputs) - len(rest_out) :]

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
