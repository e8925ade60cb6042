"""``JOURNAL_FAULT`` (docs/rules.md): what the runner does while its journal cannot commit.

The input that could not be journaled is not acted on: a press gets
``NAK,<k>,JOURNAL_FAULT``, a shoe read is asked for again (``RESEND``) and the
latest sensor snapshot taken again once commits succeed.

The alerts the service raises itself (``JOURNAL_FAULT``, ``REPLAY_UNAVAILABLE``)
are inputs (``ServiceAlert``), journaled and published as every alert is: an
``alert`` event and an ``alerts`` message with their ``feed_seq``, in the round's
alerts and in the stats. One the journal cannot take now goes out at once from
memory as a notice (its own id, no ``feed_seq``: a number handed out before it is
on the disk could be handed out again after a restart) and is **owed**: the next
input, or the fault task's retry, journals every owed alert first, each in its own
commit, in the order they were raised, so ``feed_seq`` stays one unbroken run in
the outbox's order. Each fault is its own alert: its ids name this process's
``instance`` and the fault's number in it, so a later process's fault never takes
an id the journal already holds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from table_controller.engine import (
    AlertCode,
    ConsolePress,
    ConsoleReply,
    ConsoleShow,
    DeviceOffline,
    DeviceOnline,
    Input,
    Output,
    Refusal,
    ResolvedBy,
    RoundEngine,
    ServiceAlert,
    SpotsChanged,
)
from table_controller.engine.alerts import SEVERITY
from table_controller.engine.inputs import (
    CardRead,
    CoverRead,
    Misread,
    PressesRenumbered,
    ReadGap,
    ShoeStatus,
)
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.messages import MessageFactory

log = logging.getLogger("table_controller.service.runner")

JOURNAL_FAULT_SHOW: Final = "JOURNAL FAULT: CALL TECH"
_SHOE_INPUTS: Final = (CardRead, Misread, CoverRead, ReadGap, ShoeStatus)
_SAID_ONCE: Final = (DeviceOnline, DeviceOffline, PressesRenumbered)


def _kind(inp: Input) -> str:
    """What a said-once input is about: a device, or the console's numbering."""
    return inp.device if isinstance(inp, DeviceOnline | DeviceOffline) else type(inp).__name__


@dataclass(frozen=True, slots=True)
class Committed:
    """An input the journal took, with what the engine said to it and its messages."""

    inp: Input
    outputs: list[Output]
    messages: list[OutboxMessage]
    checkpoint_after: int | None = None
    """The input's journal number when a checkpoint of the state after it is due."""


@dataclass(frozen=True, slots=True)
class Refused:
    """An input the journal could not take: the commit's fault, and what the engine said."""

    detail: str
    outputs: list[Output]


class JournalFaults:
    """The runner's side of a journal fault (mixed into ``TableRunner``)."""

    # Provided by the runner.
    journal: Journal
    messages: MessageFactory
    engine: RoundEngine
    instance: str
    clock: Callable[[], datetime]
    console_out: asyncio.Queue[ConsoleReply | ConsoleShow]
    devices_changed: asyncio.Event
    wake_publisher: Callable[[], None]
    publish_unjournaled: Callable[[OutboxMessage], None]

    def _init_faults(self) -> None:
        # The failed commit's message while it lasts, and what to redo.
        self.fault: str | None = None
        self.fault_raised = asyncio.Event()
        self.shoe_resync = asyncio.Event()
        self._faults = 0
        self._shoe_missed = False
        self._spots_missed: SpotsChanged | None = None
        self._redo: list[Input] = []
        self._owed: list[ServiceAlert] = []

    def handle(self, inp: Input) -> bool:  # the runner's
        raise NotImplementedError

    def _commit(self, inp: Input) -> Committed | Refused:  # the runner's
        raise NotImplementedError

    def _act(self, done: Committed) -> None:  # the runner's
        raise NotImplementedError

    # -- the alerts the service raises itself ------------------------------------------
    def service_alert(self, code: str, message: str, *, alert: str) -> bool:
        """Raise ``code`` (``SERVICE_ALERT_CODES``) as the alert ``alert``: journaled as
        an input, after what is owed; sent from memory and owed when the journal cannot
        take it. True when journaled now."""
        return self.handle(ServiceAlert(self.clock(), alert, code, message))

    def _pay_owed(self) -> Refused | None:
        """Journal what is owed, each in its own commit, in the order raised, so that
        ``feed_seq`` follows the outbox's order; the refusal that stopped it, if any."""
        while self._owed:
            done = self._commit(self._owed[0])
            if isinstance(done, Refused):
                return done
            self._owed.pop(0)
            self._act(done)
        return None

    def _owe(self, owed: ServiceAlert) -> None:
        """Out at once from memory as a notice (its own id, no ``feed_seq``), and journaled
        by the next input or retry, each in its own commit, ahead of that input."""
        body = {
            "alert": owed.alert,
            "code": owed.code,
            "severity": SEVERITY[AlertCode(owed.code)].value,
            "message": owed.message,
            "round_id": self.engine.round_id,
            "position": None,
            "spot": None,
            "resolved_by": owed.resolved_by,
        }
        self.publish_unjournaled(self.messages.envelope.alert(body, ts=owed.at))
        self._owed.append(owed)

    # -- the fault -----------------------------------------------------------------
    def _refuse(self, inp: Input, detail: str, outputs: Sequence[Output] = ()) -> None:
        """The input is not acted on: say so, keep what to redo."""
        if isinstance(inp, ConsolePress):
            # docs/devices.md: a press already answered gets its first answer again (the
            # engine gave it from memory, changing nothing); any other is refused.
            again = self._answered_before(inp)
            known = [o for o in outputs if isinstance(o, ConsoleReply) and o.k == inp.k]
            answer = known[0] if again and known else ConsoleReply(inp.k, Refusal.JOURNAL_FAULT)
            self.console_out.put_nowait(answer)
        elif isinstance(inp, _SHOE_INPUTS):
            self._shoe_missed = True
        elif isinstance(inp, SpotsChanged):
            self._spots_missed = inp
        elif isinstance(inp, ServiceAlert):
            if inp not in self._owed:
                self._owe(inp)
        elif isinstance(inp, _SAID_ONCE):
            # The drivers say once that a device went or came back, or that the console
            # restarted: kept to feed again, the latest of each device.
            self._redo = [r for r in self._redo if _kind(r) != _kind(inp)] + [inp]
        if self.fault is None:
            self._fault_raised(detail)
        else:
            log.debug("input not journaled (journal fault): %s", type(inp).__name__)

    def _answered_before(self, press: ConsolePress) -> bool:
        """A press the engine has answered: not while the console's restart waits to be fed
        (its numbering begins again, so every press is a new one)."""
        renumbered = any(isinstance(r, PressesRenumbered) for r in self._redo)
        return not renumbered and press.k <= self.engine.answered_up_to

    def _read_out_of_turn(self, inp: Input) -> bool:
        """A shoe input while reads a fault refused are still to come back (RESEND, in
        order): not taken ahead of them, and it comes again with them. When the disk is
        back it ends the fault here, as the fault task's retry would."""
        if not isinstance(inp, _SHOE_INPUTS):
            return False
        if self.fault is not None and self._shoe_missed:
            self.retry_journal()
            return True
        # Asked for again (shoe_resync) until the shoe task has reopened the shoe.
        return self._shoe_missed or self.shoe_resync.is_set()

    def _fault_alert(self, message: str, resolved_by: str | None) -> ServiceAlert:
        # Each fault is its own alert: this process's instance and the fault's number in it.
        key = f"{self.journal.epoch}/jf-{self.instance}-{self._faults}"
        alert_id = str(uuid.uuid5(uuid.NAMESPACE_URL, key))
        return ServiceAlert(self.clock(), alert_id, "JOURNAL_FAULT", message, resolved_by)

    def _fault_raised(self, detail: str) -> None:
        self._faults += 1
        self.fault = detail
        self.fault_raised.set()
        log.critical("JOURNAL_FAULT: %s", detail)
        self.console_out.put_nowait(ConsoleShow(JOURNAL_FAULT_SHOW))
        # The journal cannot carry it now: out from memory, and owed to the next commit.
        self._owe(self._fault_alert(f"the journal cannot commit: {detail}", None))
        self.publish_unjournaled(self.status_message())
        self.devices_changed.set()

    def status_message(self, *, online: bool = True) -> OutboxMessage:  # the runner's
        raise NotImplementedError

    def retry_journal(self) -> bool:
        """While a fault lasts: try to journal what is owed. True when the fault is over."""
        if self.fault is None:
            return True
        refused = self._pay_owed()
        if refused is not None:
            log.debug("journal still faulty: %s", refused.detail)
            return False
        return self._fault_resolved()

    def _fault_resolved(self) -> bool:
        """A commit succeeded: journal the fault's resolution; once it is, the fault is
        over and what it refused is redone. False: the journal refused the resolution
        too, and the fault goes on (nothing is said of its end before it is on disk)."""
        detail = self.fault
        resolved = self._fault_alert(f"the journal commits again: {detail}", ResolvedBy.JOURNAL)
        done = self._commit(resolved)
        if isinstance(done, Refused):
            log.debug("journal still faulty: %s", done.detail)
            return False
        self.fault = None
        self.fault_raised.clear()
        log.warning("journal commits succeed again (was: %s)", detail)
        self._act(done)
        self.console_out.put_nowait(ConsoleShow("JOURNAL OK"))
        self.devices_changed.set()
        if self._shoe_missed:
            self._shoe_missed = False
            self.shoe_resync.set()
        redo, self._redo = self._redo, []
        for inp in redo:
            self.handle(dataclasses.replace(inp, at=self.clock()))
        spots, self._spots_missed = self._spots_missed, None
        if spots is not None:
            self.handle(dataclasses.replace(spots, at=self.clock()))
        return True
