"""A small table driver for engine tests: a ``Session`` that keeps every input and output."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from table_controller.engine import (
    DECK,
    ConsoleShow,
    DeviceOffline,
    DeviceOnline,
    EngineSnapshot,
    Event,
    EventType,
    Misread,
    Output,
    Phase,
    SetLights,
    TableSetup,
    spot_bit,
)
from table_controller.engine.rules import NY, Limits, RulesProfile
from table_controller.engine.simulate import Session
from table_controller.feed.bodies import record_body

T0 = datetime(2024, 5, 1, 18, 0, tzinfo=UTC)

INITIAL, TIE, WAR = 0, 1, 2


def bit(position: int, spot: int) -> int:
    return spot_bit(position, spot)


class Table(Session):
    """Drives the engine like the service would, keeping every input and output."""

    def __init__(self, setup: TableSetup, *, rfid: bool = True, seed: int = 0) -> None:
        super().__init__(setup, seed=seed, origin=T0, step=timedelta(seconds=1), keep=True)
        self.rfid = rfid

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
        setup = TableSetup(rules, decks, positions, limits if limits is not None else Limits())
        return cls(setup, rfid=rfid)

    @property
    def state(self) -> EngineSnapshot:
        return self.engine.snapshot()

    def phase(self) -> Phase:
        return self.engine.phase

    # -- feeding

    def ok(self, action: str, arg: str | None = None) -> None:
        reason = self.press(action, arg)
        assert reason is None, f"{action} {arg}: NAK {reason}"

    def cards(self, cards: Iterable[str]) -> None:
        for c in cards:
            self.card(c)

    def misread(self) -> list[Output]:
        self.n += 1
        return self.feed(Misread(self.at(), self.n))

    def snapshot(self) -> list[Output]:
        return self.snapshot_spots()

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
        return [
            e for e in self.events(EventType.ALERT, out) if code is None or e.data["code"] == code
        ]

    def raised(self, code: str, out: Sequence[Output] | None = None) -> list[Event]:
        return [e for e in self.alerts(code, out) if e.data["resolved_by"] is None]

    def records(self) -> list[dict[str, Any]]:
        return [record_body(r) for r in self.rounds]

    def lights(self) -> list[int]:
        return [o.mask for o in self.outputs if isinstance(o, SetLights)]

    def shows(self) -> list[str]:
        return [o.text for o in self.outputs if isinstance(o, ConsoleShow)]

    def record(self) -> dict[str, Any]:
        assert self.rounds, "no round recorded"
        return record_body(self.rounds[-1])

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


def _dealing(rules: RulesProfile = NY, **bets: tuple[int | None, ...]) -> Table:
    """A round latched by NO_MORE_BETS, for the alert tests: wagers in cents as
    ``p1=(initial, tie, war)``, or 1000 on position 1's initial spot if none are given."""
    t = Table.of(rules)
    t.open_shoe()
    t.bets({int(k[1:]): v for k, v in bets.items()} or {1: (1000, None, None)})
    t.ok("NO_MORE_BETS")
    return t


def foreign_card_in_the_war(rules: RulesProfile) -> Table:
    """A round held in its war deal, which only VOID_ROUND ends: P1 tied (with a tie wager of
    100) and went to war with 500, P2 won 500 and lost its tie wager of 100, P3 tied and
    surrendered 500; the seventh queen of hearts of a six-deck shoe came in the war deal."""
    t = Table.of(rules)
    t.ok("SHUFFLED")
    t.ok("DEALER", "D-1")
    t.card("QH")  # the burn, the first queen of hearts
    t.bets({1: (500, 100, None), 2: (500, 100, None), 3: (500, None, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["5H", "QH", "5D", "5S"])  # P1 ties, P2 wins, P3 ties; the dealer's 5S
    t.ok("SURRENDER", "3")
    t.put(1, WAR, 500)
    t.ok("WAR", "1")
    t.cards(["QH"] * 5)  # the three war burns, then P1's and the dealer's: the 7th is foreign
    assert t.raised("FOREIGN_CARD")
    return t


def random_session(rules: RulesProfile, seed: int, rounds: int, *, positions: int = 7) -> Table:
    """A seeded session: random wagers, decisions, misreads, past-posts, covers and voids."""
    t = Table(TableSetup(rules, 6, positions), seed=seed)
    rng = t.rng
    devices: tuple[Literal["shoe", "sensors", "console"], ...] = ("shoe", "sensors", "console")
    for device in devices:
        t.feed(DeviceOnline(t.at(), device))

    def decide(s: Session, tied: list[int]) -> None:
        for p in tied:
            if rng.random() < 0.6:
                t.put(p, WAR, rng.choice([500, 2500]))
                t.press("WAR", str(p))
            else:
                t.press("SURRENDER", str(p))

    def disturb(s: Session) -> bool:
        if t.engine.held:
            if any(c.pending for c in t.state.round.cards):
                t.press("CARD", rng.choice(DECK))
            elif t.press("CONFIRM") is not None:
                t.press("VOID_ROUND")
            return True
        if t.engine.phase is Phase.TIE_DECISION:
            return False
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
            return False
        return True

    while len(t.rounds) < rounds:
        if t.engine.phase is Phase.SHUFFLE_DUE or len(t.shoe) < 20:
            if t.state.round.latched:
                t.press("VOID_ROUND")
            t.new_shoe()
            if rng.random() < 0.3:
                t.press("DEALER", f"D-{rng.randint(1, 9)}")
        wagers: dict[int, int | None] = {}
        for p in range(1, positions + 1):
            initial, tie = rng.choice([None, 500, 2500]), rng.choice([None, None, 100])
            if initial is not None:
                wagers[bit(p, INITIAL)] = initial
            if tie is not None:
                wagers[bit(p, TIE)] = tie
        if not any(b % 3 == INITIAL for b in wagers):
            wagers[bit(1, INITIAL)] = 500
        record = t.play_round(
            wagers, decide, no_more_bets=rng.random() < 0.8, disturb=disturb, max_steps=80
        )
        if record is None and t.state.round.latched:
            t.press("VOID_ROUND")
        for p in range(1, positions + 1):
            t.chips.pop(bit(p, WAR), None)
    return t
