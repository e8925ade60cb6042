"""A small table driver for engine tests: inputs with rising times, outputs collected."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from table_controller.engine import (
    CardRead,
    ConsolePress,
    ConsoleReply,
    ConsoleShow,
    CoverRead,
    Event,
    Input,
    Misread,
    Output,
    Phase,
    RoundRecorded,
    SetLights,
    SpotsChanged,
    TableSetup,
    TableState,
    initial_state,
    spot_bit,
    transition,
)
from table_controller.engine.rules import Limits, RulesProfile

T0 = datetime(2024, 5, 1, 18, 0, tzinfo=UTC)

INITIAL, TIE, WAR = 0, 1, 2


def bit(position: int, spot: int) -> int:
    return spot_bit(position, spot)


@dataclass
class Table:
    """Drives the pure engine like the service would, keeping every input and output."""

    setup: TableSetup
    state: TableState = field(init=False)
    inputs: list[Input] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    last: list[Output] = field(default_factory=list)
    k: int = 0
    n: int = 0
    ticks: int = 0
    chips: dict[int, int | None] = field(default_factory=dict)
    faults: int = 0
    rfid: bool = True

    def __post_init__(self) -> None:
        self.state = initial_state(self.setup)

    @classmethod
    def of(
        cls,
        rules: RulesProfile,
        *,
        decks: int = 6,
        positions: int = 7,
        limits: Limits | None = None,
        rfid: bool = True,
    ) -> Table:
        setup = (
            TableSetup(rules, decks, positions)
            if limits is None
            else TableSetup(rules, decks, positions, limits)
        )
        return cls(setup, rfid=rfid)

    def phase(self) -> Phase:
        return self.state.phase

    # -- feeding

    def at(self) -> datetime:
        self.ticks += 1
        return T0 + timedelta(seconds=self.ticks)

    def feed(self, inp: Input) -> list[Output]:
        self.state, out = transition(self.state, inp)
        self.inputs.append(inp)
        self.outputs.extend(out)
        self.last = out
        return out

    def press(self, action: str, arg: str | None = None) -> str | None:
        """Press a console button; returns the NAK reason, or None for ACK."""
        self.k += 1
        out = self.feed(ConsolePress(self.at(), self.k, action, arg))
        replies = [o for o in out if isinstance(o, ConsoleReply)]
        assert len(replies) == 1, f"exactly one answer per press, got {replies}"
        assert replies[0].k == self.k
        return replies[0].reason

    def ok(self, action: str, arg: str | None = None) -> None:
        reason = self.press(action, arg)
        assert reason is None, f"{action} {arg}: NAK {reason}"

    def card(self, card: str) -> list[Output]:
        self.n += 1
        return self.feed(CardRead(self.at(), self.n, card))

    def cards(self, cards: Iterable[str]) -> None:
        for c in cards:
            self.card(c)

    def misread(self) -> list[Output]:
        self.n += 1
        return self.feed(Misread(self.at(), self.n))

    def cover(self) -> list[Output]:
        self.n += 1
        return self.feed(CoverRead(self.at(), self.n))

    def snapshot(self) -> list[Output]:
        present = 0
        for b in self.chips:
            present |= 1 << b
        values = tuple(sorted((b, c) for b, c in self.chips.items() if c is not None))
        return self.feed(
            SpotsChanged(self.at(), present, self.faults, values if self.rfid else None)
        )

    def put(self, position: int, spot: int, cents: int | None = 100) -> list[Output]:
        self.chips[bit(position, spot)] = cents
        return self.snapshot()

    def take(self, position: int, spot: int) -> list[Output]:
        self.chips.pop(bit(position, spot), None)
        return self.snapshot()

    def bets(self, wagers: Mapping[int, tuple[int | None, ...]]) -> list[Output]:
        """Set the layout: {position: (initial, tie, war)} cents (None = no chips)."""
        self.chips.clear()
        for p, amounts in wagers.items():
            for spot, cents in enumerate(amounts):
                if cents is not None:
                    self.chips[bit(p, spot)] = cents
        return self.snapshot()

    def fault(self, position: int, spot: int, on: bool = True) -> list[Output]:
        mask = 1 << bit(position, spot)
        self.faults = self.faults | mask if on else self.faults & ~mask
        return self.snapshot()

    # -- reading outputs

    def events(self, type_: str | None = None, out: Sequence[Output] | None = None) -> list[Event]:
        src = self.outputs if out is None else out
        return [o for o in src if isinstance(o, Event) and (type_ is None or o.type == type_)]

    def alerts(self, code: str | None = None, out: Sequence[Output] | None = None) -> list[Event]:
        return [e for e in self.events("alert", out) if code is None or e.data["code"] == code]

    def raised(self, code: str, out: Sequence[Output] | None = None) -> list[Event]:
        return [e for e in self.alerts(code, out) if e.data["resolved_by"] is None]

    def records(self) -> list[dict[str, Any]]:
        return [dict(o.record) for o in self.outputs if isinstance(o, RoundRecorded)]

    def lights(self) -> list[int]:
        return [o.mask for o in self.outputs if isinstance(o, SetLights)]

    def shows(self) -> list[str]:
        return [o.text for o in self.outputs if isinstance(o, ConsoleShow)]

    def record(self) -> dict[str, Any]:
        recs = self.records()
        assert recs, "no round recorded"
        return recs[-1]

    def position(self, p: int) -> dict[str, Any]:
        for entry in self.record()["positions"]:
            if entry["position"] == p:
                return dict(entry)
        raise AssertionError(f"position {p} not in the record")

    def wager(self, p: int, spot: str) -> dict[str, Any]:
        for w in self.position(p)["wagers"]:
            if w["spot"] == spot:
                return dict(w)
        raise AssertionError(f"no {spot} wager for position {p}")

    # -- whole steps

    def open_shoe(self, dealer: str | None = "D-1") -> None:
        """A new shoe (and dealer), its burn card drawn: ready for wagers."""
        self.ok("SHUFFLED")
        if dealer is not None:
            self.ok("DEALER", dealer)
        self.card("2C")  # §(h)(1): the burn card


def war_spot_mask(*positions: int) -> int:
    mask = 0
    for p in positions:
        mask |= 1 << bit(p, WAR)
    return mask


def random_session(rules: RulesProfile, seed: int, rounds: int, *, positions: int = 7) -> Table:
    """A seeded session: random wagers, decisions, misreads, past-posts, covers and voids."""
    import random

    from table_controller.engine import DECK, DeviceOffline, DeviceOnline

    rng = random.Random(seed)
    t = Table.of(rules, positions=positions)
    devices: tuple[Literal["shoe", "sensors", "console"], ...] = ("shoe", "sensors", "console")
    for device in devices:
        t.feed(DeviceOnline(t.at(), device))
    shoe: list[str] = []
    while len(t.records()) < rounds:
        if t.phase() is Phase.SHUFFLE_DUE or len(shoe) < 20:
            if t.state.round.latched:
                t.press("VOID_ROUND")
            shoe = list(DECK) * t.setup.decks
            rng.shuffle(shoe)
            t.press("SHUFFLED")
            if rng.random() < 0.3:
                t.press("DEALER", f"D-{rng.randint(1, 9)}")
        wagers = {
            p: (rng.choice([None, 500, 2500]), rng.choice([None, None, 100]), None)
            for p in range(1, positions + 1)
        }
        if all(w[0] is None for w in wagers.values()):
            wagers[1] = (500, None, None)
        t.bets(wagers)
        if rng.random() < 0.8:
            t.press("NO_MORE_BETS")
        before = len(t.records())
        for _ in range(80):
            if len(t.records()) > before or not shoe:
                break
            if t.state.held:
                if any(c.pending for c in t.state.round.cards):
                    t.press("CARD", rng.choice(DECK))
                elif t.press("CONFIRM") is not None:
                    t.press("VOID_ROUND")
                continue
            if t.phase() is Phase.TIE_DECISION:
                for h in t.state.round.hands:
                    if h.outcome is not None and h.outcome.value == "tie" and h.decision is None:
                        if rng.random() < 0.6:
                            t.put(h.position, WAR, rng.choice([500, 2500]))
                            t.press("WAR", str(h.position))
                        else:
                            t.press("SURRENDER", str(h.position))
                continue
            roll = rng.random()
            if roll < 0.03:
                t.misread()
            elif roll < 0.05:
                position = rng.randint(1, positions)
                t.put(position, rng.choice([INITIAL, TIE]), rng.choice([None, 100, 9999]))
            elif roll < 0.06:
                t.feed(DeviceOffline(t.at(), "console", "heartbeat lost"))
                t.feed(DeviceOnline(t.at(), "console"))
            elif roll < 0.07:
                t.cover()
            elif roll < 0.075:
                t.press("VOID_ROUND")
            else:
                t.card(shoe.pop())
        if len(t.records()) == before and t.state.round.latched:
            t.press("VOID_ROUND")
        for p in range(1, positions + 1):
            t.chips.pop(bit(p, WAR), None)
    return t
