"""The shoe's link rules without I/O: order, gaps, resends, reboots, resume, watchdog."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from drivers.lineframe.cards import DECK, Card
from drivers.lineframe.session import Step
from drivers.shoe.frames import (
    CardFrame,
    CoverFrame,
    HelloFrame,
    InfoFrame,
    MisreadFrame,
    ReadFrame,
    ResendFrame,
    ShoeCommand,
    ShoeCondition,
    StatusFrame,
)
from drivers.shoe.protocol import (
    CardDrawn,
    CardMisread,
    CoverDrawn,
    ReadsLost,
    ReadsLostReason,
    ShoeEvent,
    ShoeOnline,
    ShoeProtocol,
    ShoeState,
)

AS, TD, KH = Card.parse("AS"), Card.parse("TD"), Card.parse("KH")
OK = ShoeCondition.OK


def card(n: int, c: Card = AS) -> CardFrame:
    return CardFrame(n, c)


def feed(
    p: ShoeProtocol, *frames: object, now: float = 0.0
) -> tuple[list[ShoeEvent], list[ShoeCommand]]:
    events: list[ShoeEvent] = []
    sent: list[ShoeCommand] = []
    for frame in frames:
        step = p.frame_received(frame, now)  # type: ignore[arg-type]
        events += step.events
        sent += step.send
    return events, sent


def connected(last_n: int = 0, *, hello_last: int | None = None) -> ShoeProtocol:
    p = ShoeProtocol(last_n)
    assert list(p.connection_made(0.0).send) == [InfoFrame()]
    feed(p, HelloFrame("S", "1", last_n if hello_last is None else hello_last))
    return p


def test_connect_asks_info_and_hello_brings_the_shoe_online() -> None:
    p = ShoeProtocol()
    assert p.connection_made(10.0).send == (InfoFrame(),)
    step = p.frame_received(HelloFrame("SHOE-0001", "1.4.2", 0), 10.1)
    assert step.online == ShoeOnline("SHOE-0001", "1.4.2")
    assert step.send == ()


def test_reads_in_order_are_delivered_once() -> None:
    p = connected()
    events, sent = feed(p, card(1, AS), card(2, TD), card(2, TD), MisreadFrame(3), CoverFrame(4))
    assert events == [CardDrawn(1, AS), CardDrawn(2, TD), CardMisread(3), CoverDrawn(4)]
    assert sent == []
    assert p.taken == 4
    assert p.duplicates == 1


def test_a_skipped_number_is_asked_for_and_later_reads_wait() -> None:
    p = connected()
    events, sent = feed(p, card(1), card(3, KH), card(4, TD))
    assert events == [CardDrawn(1, AS)]
    assert sent == [ResendFrame(2)]  # asked once, not once per held read
    events, sent = feed(p, card(2, TD), card(3, KH), card(4, TD))
    assert events == [CardDrawn(2, TD), CardDrawn(3, KH), CardDrawn(4, TD)]
    assert sent == []


def test_a_heartbeat_ahead_of_the_reads_is_a_gap() -> None:
    p = connected()
    events, sent = feed(p, card(1), StatusFrame(2, OK))
    assert CardDrawn(1, AS) in events
    assert sent == [ResendFrame(2)]


def test_an_unfilled_resend_is_given_up_after_one_second() -> None:
    p = connected()
    _, sent = feed(p, StatusFrame(0, OK), card(1), card(4, KH), card(6, TD), now=5.0)
    assert sent == [ResendFrame(2)]  # asked when 4 came: it covers 2 and 3
    assert p.deadline() == 6.0
    assert p.timer(5.99).events == ()
    step = p.timer(6.0)
    assert list(step.events) == [ReadsLost(2, ReadsLostReason.RESEND_TIMEOUT, 3), CardDrawn(4, KH)]
    # 5 was found missing after that resend was asked: it gets its own second.
    assert list(step.send) == [ResendFrame(5)]
    p.frame_received(StatusFrame(6, OK), 6.5)
    step = p.timer(7.0)
    assert list(step.events) == [ReadsLost(5, ReadsLostReason.RESEND_TIMEOUT, 5), CardDrawn(6, TD)]
    assert p.taken == 6
    # The given-up numbers stay given up: a late arrival is a repeat.
    events, _ = feed(p, card(2), now=7.5)
    assert events == []


def test_a_gap_found_beyond_an_outstanding_resend_gets_its_own_resend() -> None:
    p = connected()
    _, sent = feed(p, card(1), card(3), now=0.0)  # RESEND,2 covering up to 3
    assert sent == [ResendFrame(2)]
    _, sent = feed(p, card(5), now=0.2)  # 4 missing too, beyond what RESEND,2 covered
    assert sent == []  # still waiting for the first resend
    events, sent = feed(p, card(2), card(3), now=0.3)
    assert [e.n for e in events if isinstance(e, CardDrawn)] == [2, 3]
    assert sent == [ResendFrame(4)]


def test_resume_asks_only_for_what_was_missed() -> None:
    p = ShoeProtocol(last_n=40)
    p.connection_made(0.0)
    events, sent = feed(p, HelloFrame("S", "1", 43))
    assert sent == [ResendFrame(41)]
    events, sent = feed(p, card(41), card(42), card(43))
    assert [e.n for e in events if isinstance(e, CardDrawn)] == [41, 42, 43]
    # Reads it already has are never delivered again.
    events, sent = feed(p, card(40), card(39))
    assert events == []


def test_resume_with_nothing_missed_asks_nothing() -> None:
    p = ShoeProtocol(last_n=7)
    p.connection_made(0.0)
    _, sent = feed(p, HelloFrame("S", "1", 7), StatusFrame(7, OK))
    assert sent == []


def test_hello_below_what_was_taken_is_a_reboot() -> None:
    p = connected()
    feed(p, *(card(n) for n in range(1, 11)))
    events, sent = feed(p, HelloFrame("S", "1", 3))
    assert events == [ReadsLost(11, ReadsLostReason.SHOE_REBOOTED)]
    assert sent == [ResendFrame(1)]
    events, _ = feed(p, card(1, KH), card(2, TD), card(3, AS))
    assert events == [CardDrawn(1, KH), CardDrawn(2, TD), CardDrawn(3, AS)]


def test_a_reboot_with_nothing_read_is_reported_and_restarts_the_count() -> None:
    """docs/devices.md: the counter starts again; nothing to resend, but the controller numbering
    reads after the driver must start again too, and reads before the reboot may be lost."""
    p = connected()
    feed(p, card(1), card(2))
    events, sent = feed(p, HelloFrame("S", "1", 0))
    assert events == [ReadsLost(3, ReadsLostReason.SHOE_REBOOTED)]
    assert sent == []
    events, _ = feed(p, card(1, KH))
    assert events == [CardDrawn(1, KH)]


def test_a_read_just_inside_the_resend_window_is_taken() -> None:
    p = connected()
    feed(p, StatusFrame(5, OK))
    feed(p, card(5 + 64))
    assert p.held == 1  # taken, waiting for reads 1-68 to be filled
    assert p.corrupt == 0
    feed(p, card(5 + 65))
    assert p.corrupt == 1


def test_state_changes_are_reported_once() -> None:
    p = connected()
    events, _ = feed(
        p,
        StatusFrame(0, OK),
        StatusFrame(0, OK),
        StatusFrame(0, ShoeCondition.DOOR_OPEN),
        StatusFrame(0, ShoeCondition.DOOR_OPEN),
        StatusFrame(0, OK),
    )
    assert events == [
        ShoeState(OK),
        ShoeState(ShoeCondition.DOOR_OPEN),
        ShoeState(OK),
    ]


def test_no_heartbeat_for_three_seconds_drops_the_session() -> None:
    p = ShoeProtocol()
    p.connection_made(100.0)
    p.frame_received(HelloFrame("S", "1", 0), 100.1)
    p.frame_received(StatusFrame(0, OK), 101.0)
    assert p.deadline() == 104.0
    assert p.timer(103.9).lost is None
    assert p.timer(104.0).lost == "heartbeat_timeout"


def test_info_is_asked_again_until_hello_comes() -> None:
    p = ShoeProtocol()
    p.connection_made(0.0)
    assert p.deadline() == 1.0
    assert p.timer(1.0).send == (InfoFrame(),)
    p.frame_received(StatusFrame(0, OK), 1.5)
    assert p.timer(2.0).send == (InfoFrame(),)
    p.frame_received(HelloFrame("S", "1", 0), 2.1)
    assert p.timer(3.0).send == ()


def test_a_reconnect_asks_the_resend_again_after_hello() -> None:
    p = connected()
    _, sent = feed(p, card(1), card(3))
    assert sent == [ResendFrame(2)]
    p.connection_made(10.0)
    _, sent = feed(p, HelloFrame("S", "1", 3), now=10.1)
    assert sent == [ResendFrame(2)]


# -- a shoe and a lossy line, driven by hypothesis ------------------------------------------


class ShoeLink(RuleBasedStateMachine):
    """A model shoe whose frames may be lost, repeated or resent late.

    Invariant: within one count of the shoe, reads come out in increasing order,
    each at most once, and every number up to the last one delivered is either
    delivered or reported lost. When the line delivers every resend, nothing is lost.
    """

    def __init__(self) -> None:
        super().__init__()
        self.p = ShoeProtocol()
        self.now = 0.0
        self.shoe: list[ReadFrame] = []  # the shoe's reads since power-up, index n-1
        self.delivered: list[int] = []
        self.lost: set[int] = set()
        self.pending_resends: list[int] = []
        self.reliable_resends = True
        self.apply(self.p.connection_made(self.now))
        self.apply(self.p.frame_received(HelloFrame("S", "1", 0), self.now))

    def apply(self, step: Step[ShoeCommand, ShoeEvent]) -> None:
        for event in step.events:
            if isinstance(event, CardDrawn | CardMisread | CoverDrawn):
                self.delivered.append(event.n)
                expected = self.shoe[event.n - 1]
                assert event.n == expected.n
                if isinstance(expected, CardFrame):
                    assert event == CardDrawn(expected.n, expected.card)
            elif isinstance(event, ReadsLost):
                assert event.reason == ReadsLostReason.RESEND_TIMEOUT
                assert event.last_missing is not None
                self.lost.update(range(event.first_missing, event.last_missing + 1))
        for command in step.send:
            if isinstance(command, ResendFrame):
                self.pending_resends.append(command.n)

    def receive(self, frame: object) -> None:
        self.apply(self.p.frame_received(frame, self.now))  # type: ignore[arg-type]

    @rule(
        c=st.sampled_from(DECK),
        kind=st.sampled_from(["card", "card", "misread"]),
        sent=st.booleans(),
    )
    def draw(self, c: Card, kind: str, sent: bool) -> None:
        n = len(self.shoe) + 1
        frame: ReadFrame = CardFrame(n, c) if kind == "card" else MisreadFrame(n)
        self.shoe.append(frame)
        if sent:
            self.receive(frame)

    @precondition(lambda self: bool(self.shoe))
    @rule(data=st.data())
    def repeat_an_old_read(self, data: st.DataObject) -> None:
        self.receive(data.draw(st.sampled_from(self.shoe)))

    @rule(ahead=st.integers(min_value=65, max_value=10_000), c=st.sampled_from(DECK))
    def bit_flipped_read(self, ahead: int, c: Card) -> None:
        # Beyond the resend window of anything the shoe said or was taken: never acted on.
        before = (self.p.taken, self.p.held, self.p.deadline(), self.p.corrupt)
        step = self.p.frame_received(CardFrame(len(self.shoe) + ahead, c), self.now)
        assert step == Step()
        assert (self.p.taken, self.p.held, self.p.deadline()) == before[:3]
        assert self.p.corrupt == before[3] + 1

    @precondition(lambda self: self.p.taken > 0)
    @rule(data=st.data())
    def bit_flipped_heartbeat(self, data: st.DataObject) -> None:
        behind = data.draw(st.integers(min_value=0, max_value=self.p.taken - 1))
        deadline = self.p.deadline()
        assert self.p.frame_received(StatusFrame(behind, OK), self.now) == Step()
        assert self.p.deadline() == deadline

    @rule()
    def heartbeat(self) -> None:
        self.receive(StatusFrame(len(self.shoe), OK))

    @precondition(lambda self: bool(self.pending_resends))
    @rule(lose=st.booleans())
    def answer_resend(self, lose: bool) -> None:
        start = self.pending_resends.pop(0)
        if lose:
            self.reliable_resends = False
            return
        kept = self.shoe[-64:]  # docs/devices.md: the shoe keeps the last 64 reads
        if kept and kept[0].n > start:
            self.reliable_resends = False
        for frame in kept:
            if frame.n >= start:
                self.receive(frame)

    @rule(dt=st.sampled_from([0.1, 0.5, 1.0, 3.5]))
    def time_passes(self, dt: float) -> None:
        self.now += dt
        deadline = self.p.deadline()
        if deadline is not None and self.now >= deadline:
            if self.pending_resends:
                self.reliable_resends = False  # the line held a resend past its 1 s
            step = self.p.timer(self.now)
            if step.lost is not None:
                # The watchdog dropped the session: reconnect, as the link would.
                self.pending_resends.clear()
                self.reliable_resends = False
                self.apply(self.p.connection_made(self.now))
                self.receive(HelloFrame("S", "1", len(self.shoe)))
            else:
                self.apply(step)

    @invariant()
    def in_order_exactly_once(self) -> None:
        assert self.delivered == sorted(set(self.delivered))
        assert not self.lost & set(self.delivered)
        assert self.p.taken == (
            max([*self.delivered, *self.lost]) if self.delivered or self.lost else 0
        )
        assert set(range(1, self.p.taken + 1)) == set(self.delivered) | self.lost

    @invariant()
    def nothing_lost_on_a_reliable_line(self) -> None:
        # Only a resend that was itself lost, or a dropped session, may lose reads.
        if self.reliable_resends:
            assert not self.lost


ShoeLink.TestCase.settings = settings(max_examples=150, stateful_step_count=40)
test_shoe_link_state_machine = ShoeLink.TestCase
