"""The steps of a scenario file: actions at the table and expectations.

A step is a mapping with exactly one step key (``bet``, ``press``, ...); the
key picks the model (pydantic's discriminator), so an error names the step's
own fields.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, Discriminator, Tag, model_validator

from table_controller.engine import Phase
from table_controller.rigs.scenario.compare import show
from table_controller.rigs.scenario.expect import AlertExpect, RoundExpect, StateExpect
from table_controller.rigs.scenario.fields import (
    AnswerText,
    CardsArg,
    Cents,
    Position,
    PressText,
    Seconds,
    Strict,
)

Device = Literal["shoe", "console", "sensors"]
SpotName = Literal["initial", "tie", "war"]


class BetSpec(Strict):
    """The chips on a position's three spots (cents); a spot not given is cleared.

    The tie spot holds ``tie`` (a tie wager on the original deal) or ``war_tie``
    (chips there as a tied position decides: a tie wager on the war deal, §(i)(5)).
    The runner refuses ``tie`` chips on a position deciding a tie, so that a tie wager
    never silently becomes a war-tie wager, and ``war_tie`` at any other time.
    """

    position: Position
    initial: Cents | None = None
    tie: Cents | None = None
    war: Cents | None = None
    war_tie: Cents | None = None

    @model_validator(mode="after")
    def _one_tie_spot(self) -> BetSpec:
        if self.tie is not None and self.war_tie is not None:
            raise ValueError("tie and war_tie are chips on the same spot: give one")
        return self

    @property
    def tie_spot(self) -> int | None:
        return self.war_tie if self.war_tie is not None else self.tie


class Step(Strict):
    @property
    def kind(self) -> str:
        """The step's key (``bet``, ``press``, ...)."""
        return next(k for k in type(self).model_fields if k in STEP_TYPES)

    def describe(self) -> str:
        value = getattr(self, self.kind)
        if isinstance(value, BaseModel):
            text = ", ".join(f"{k}: {show(v)}" for k, v in _given(value).items())
            return f"{self.kind} {{{text}}}"
        if isinstance(value, tuple):
            return f"{self.kind} [{', '.join(value)}]"
        return f"{self.kind} {show(value)}"


def _given(model: BaseModel) -> dict[str, Any]:
    return model.given() if isinstance(model, Strict) else model.model_dump()


class BetStep(Step):
    bet: BetSpec
    wait: bool = True
    """Wait until the controller shows the wagers now on the layout."""


class PressStep(Step):
    press: PressText
    expect: AnswerText | None = None

    @property
    def action(self) -> str:
        return self.press.split(maxsplit=1)[0]

    @property
    def arg(self) -> str | None:
        words = self.press.split(maxsplit=1)
        return words[1] if len(words) > 1 else None

    def describe(self) -> str:
        return f"press {self.press}" + (f" -> {self.expect}" if self.expect else "")


class DrawStep(Step):
    draw: CardsArg
    """How many cards pass the reader, or exactly which (checked against the shoe)."""
    wait: bool = True
    """Wait until the controller has taken each read."""


class MisreadStep(Step):
    misread: CardsArg
    """The next cards pass the reader unrecognised (``MISREAD``)."""
    wait: bool = True


class DropStep(Step):
    drop: CardsArg
    """The next cards' reads are dropped on the line; the shoe sends them again on RESEND."""
    wait: bool = True


class FlipStep(Step):
    flip: CardsArg
    """The next cards' reads arrive with one bit flipped: the controller drops each as
    corrupt (docs/devices.md: the XOR checksum) and asks for it again; the shoe's answer to
    ``RESEND`` is clean."""
    twice: bool = False
    """The same bit flipped in the first two digits of the read number instead
    (``$CARD,10,AS`` as ``$CARD,98,AS``): the checksum cannot see it, only the frame's
    plausibility can (docs/devices.md). Needs read numbers of two digits or more."""
    wait: bool = True


class LoseStep(Step):
    lose: CardsArg
    """The next cards' reads are lost for good: dropped, and never sent again."""


class UnplugStep(Step):
    unplug: Device


class ReplugStep(Step):
    replug: Device


class HangStep(Step):
    hang: Device
    """The device goes silent with its link up (the heartbeat watchdog's case)."""


class ResumeStep(Step):
    resume: Device


class RestartStep(Step):
    restart: Literal["shoe", "console", "controller"]
    """shoe: a power cycle (its read counter starts again); console: its press numbering
    starts again; controller: a clean stop and start (rebuilt from its journal)."""


class KillStep(Step):
    kill: Literal["controller"]
    """The controller is killed without warning (SIGKILL) and started again: what it had
    not journaled is lost, and it rebuilds the rest from its journal."""


class ValuesLostStep(Step):
    values_lost: Literal["sensors"]
    """The board sends one change of its spots without the chips' values (a SPOTS
    report of a new ``seq`` and no VALUES), as a board just back may: the amounts in
    action are unknown until its next complete change (``WAGER_UNVERIFIED``)."""


class ShoeStatusStep(Step):
    shoe_status: Literal["OK", "DOOR_OPEN", "JAM", "FAULT"]
    """The shoe reports this state in its heartbeats from now on (``SHOE_FAULT``)."""


class SkipStep(Step):
    skip: Position
    """The console's ``SKIP,<pos>``: the dealer dealt no card to the position
    (§(h)(3)(iii)); with ``expect`` the answer is an expectation."""
    expect: AnswerText | None = None


class SensorFault(Strict):
    position: Position
    spot: SpotName
    faulty: bool = True
    """false: the board stops flagging the spot (YAML 1.1 reads a key ``on`` as true)."""


class SensorFaultStep(Step):
    sensor_fault: SensorFault


class BrokerStep(Step):
    broker: Literal["down", "up"]
    """down: the controller's connection to the broker drops and reconnecting is refused,
    as when the broker or the network to it is away; up: it may connect again."""


class ExpectStep(Step):
    timeout: Seconds | None = None


class ExpectPhaseStep(ExpectStep):
    expect_phase: Phase


class ExpectStateStep(ExpectStep):
    expect_state: StateExpect


class ExpectAlertStep(ExpectStep):
    expect_alert: AlertExpect


class ExpectNoAlertStep(Step):
    expect_no_alert: AlertExpect
    """No such alert seen so far: checked at once, not waited for."""


class ExpectEventStep(ExpectStep):
    expect_event: dict[str, Any]
    """An event whose fields equal these (``type`` required)."""

    @model_validator(mode="after")
    def _typed(self) -> ExpectEventStep:
        if not isinstance(self.expect_event.get("type"), str):
            raise ValueError("expect_event needs a 'type' (card, bets_closed, decision, ...)")
        return self


class ExpectRoundStep(ExpectStep):
    expect_round: RoundExpect
    """The next round record not yet checked (or the one with ``round_id``)."""

    def describe(self) -> str:
        rid = self.expect_round.round_id
        return "expect_round" + (f" {{round_id: {rid}}}" if rid is not None else "")


STEP_TYPES: Final[dict[str, type[Step]]] = {
    "bet": BetStep,
    "press": PressStep,
    "draw": DrawStep,
    "misread": MisreadStep,
    "drop": DropStep,
    "lose": LoseStep,
    "flip": FlipStep,
    "unplug": UnplugStep,
    "replug": ReplugStep,
    "hang": HangStep,
    "resume": ResumeStep,
    "restart": RestartStep,
    "kill": KillStep,
    "sensor_fault": SensorFaultStep,
    "shoe_status": ShoeStatusStep,
    "values_lost": ValuesLostStep,
    "skip": SkipStep,
    "broker": BrokerStep,
    "expect_phase": ExpectPhaseStep,
    "expect_state": ExpectStateStep,
    "expect_alert": ExpectAlertStep,
    "expect_no_alert": ExpectNoAlertStep,
    "expect_event": ExpectEventStep,
    "expect_round": ExpectRoundStep,
}


def _step_kind(value: Any) -> str | None:
    if isinstance(value, Step):
        return value.kind
    if not isinstance(value, dict):
        return None
    kinds = [k for k in value if k in STEP_TYPES]
    return kinds[0] if len(kinds) == 1 else None


AnyStep = Annotated[
    Annotated[BetStep, Tag("bet")]
    | Annotated[PressStep, Tag("press")]
    | Annotated[DrawStep, Tag("draw")]
    | Annotated[MisreadStep, Tag("misread")]
    | Annotated[DropStep, Tag("drop")]
    | Annotated[LoseStep, Tag("lose")]
    | Annotated[FlipStep, Tag("flip")]
    | Annotated[UnplugStep, Tag("unplug")]
    | Annotated[ReplugStep, Tag("replug")]
    | Annotated[HangStep, Tag("hang")]
    | Annotated[ResumeStep, Tag("resume")]
    | Annotated[RestartStep, Tag("restart")]
    | Annotated[KillStep, Tag("kill")]
    | Annotated[SensorFaultStep, Tag("sensor_fault")]
    | Annotated[ShoeStatusStep, Tag("shoe_status")]
    | Annotated[ValuesLostStep, Tag("values_lost")]
    | Annotated[SkipStep, Tag("skip")]
    | Annotated[BrokerStep, Tag("broker")]
    | Annotated[ExpectPhaseStep, Tag("expect_phase")]
    | Annotated[ExpectStateStep, Tag("expect_state")]
    | Annotated[ExpectAlertStep, Tag("expect_alert")]
    | Annotated[ExpectNoAlertStep, Tag("expect_no_alert")]
    | Annotated[ExpectEventStep, Tag("expect_event")]
    | Annotated[ExpectRoundStep, Tag("expect_round")],
    Discriminator(
        _step_kind,
        custom_error_type="step_kind",
        custom_error_message="a step is a mapping with exactly one of: " + ", ".join(STEP_TYPES),
    ),
]


CardStep = DrawStep | MisreadStep | DropStep | FlipStep | LoseStep


def cards_of(step: CardStep) -> int | tuple[str, ...]:
    value: int | tuple[str, ...] = getattr(step, step.kind)
    return value
