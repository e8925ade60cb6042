"""The checks of tests/engine/test_machine.py's state machine, made after every input:

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

from hypothesis import event
from hypothesis.stateful import RuleBasedStateMachine, invariant

from table_controller.engine import (
    CardRead,
    ConsolePress,
    ConsoleReply,
    EngineSnapshot,
    Event,
    Input,
    Misread,
    Output,
    Phase,
    ReadGap,
    RoundEngine,
    RoundRecorded,
    TableSetup,
    device_states,
    replay,
    state_view,
    stats_view,
)
from table_controller.engine.rules import NY
from table_controller.feed.bodies import record_body

from .helpers import T0

# A spot the board reports as occupied without a value.
SHOWN = "chips"


def d_pos(event: Event) -> set[int]:
    """The playing positions of a ``bets_closed`` event."""
    return set(event.data["positions"])


class TableChecks(RuleBasedStateMachine):
    """The engine fed one input at a time and checked after each (see the module
    docstring); TableMachine's rules make the inputs."""

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
