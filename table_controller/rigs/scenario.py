"""Scenario files for test rigs, and ``table-controller scenario run``.

A scenario (YAML, ``docs/scenarios.md``) describes one table, the exact order
of the cards in its shoe, and steps: chips placed and taken, console presses,
cards drawn, faults (a misread, a dropped or lost read, a device unplugged or
silent, the broker away) and expectations (round records, alerts, events, the
phase). The runner plays it against the production controller through the
simulators over real transports (``socket://``, ``simusb://``) and a real
MQTT broker, and reports every expectation as passed or failed, with what was
seen instead.

Files are validated by pydantic models before anything starts; an error names
the file, the step, its line and the field. Expectations wait for what they
expect under a timeout. Actions that later steps depend on (a bet, a press, a
card) wait until the controller has taken them, so that a scenario plays the
same way every time although the shoe, the console and the sensor board reach
the controller over separate connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.resources
import logging
import re
import socket
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

import aiomqtt
import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    ValidationError,
    model_validator,
)

from drivers.console.frames import ConsoleAction, NakFrame
from drivers.lineframe.cards import Card
from drivers.lineframe.codec import LineFrame
from drivers.sensors.frames import MAX_CENTS
from drivers.shoe.frames import CardFrame, CoverFrame, MisreadFrame
from simulators.console import ConsoleRestartedError
from simulators.shoe import ShoeEmptyError, ShoeSimulator
from table_controller.engine import AlertCode, Decision, Outcome, Phase, ResolvedBy, Role, Severity
from table_controller.engine.rules import RulesName, profile
from table_controller.feed.broker import parse_broker_url
from table_controller.feed.topics import RETAINED_TOPICS
from table_controller.rigs.broker import MosquittoBroker, free_port
from table_controller.rigs.rig import (
    SPOT_INITIAL,
    SPOT_TIE,
    SPOT_WAR,
    Observer,
    TableRig,
    TableSpec,
)
from table_controller.service.config import ConfigError, parse_config

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S: Final = 5.0
"""How long an expectation, or an action's effect, is waited for unless the file says."""
ONLINE_TIMEOUT_S: Final = 15.0
"""How long the controller may take to report itself and every device online."""
SITE: Final = "scenarios"
COVER: Final = "COVER"
SHIPPED_PACKAGE: Final = "simulators.scenarios"
SPOT_NUMBERS: Final = {"initial": SPOT_INITIAL, "tie": SPOT_TIE, "war": SPOT_WAR}
MAX_CARDS_PER_STEP: Final = 500

Device = Literal["shoe", "console", "sensors"]
SpotName = Literal["initial", "tie", "war"]
WagerSpot = Literal["initial", "tie", "war", "war_tie"]
TopicName = Literal["status", "state", "events", "rounds", "alerts", "stats"]
WagerResult = Literal["win", "lose", "push", "surrender", "void"]
Cents = Annotated[int, Field(ge=0, le=MAX_CENTS)]
Position = Annotated[int, Field(ge=1, le=10)]
Seconds = Annotated[float, Field(gt=0, le=120)]
T = TypeVar("T")


class ScenarioError(ValueError):
    """A scenario file cannot be used; the message names the file, step, line and field."""


# ================================================================ the file format


def _card_text(text: Any) -> str:
    """A card as the devices write it (``TD``), or ``COVER`` for the cover card."""
    if not isinstance(text, str):
        raise ValueError(f"a card is text such as 'TD' or {COVER!r}, not {text!r}")
    upper = text.strip().upper()
    if upper == COVER:
        return COVER
    return str(Card.parse(upper))


def _plain_card(text: Any) -> str:
    card = _card_text(text)
    if card == COVER:
        raise ValueError("the cover card cannot be here")
    return card


def _card_list(value: Any) -> tuple[str, ...]:
    """Cards as a list, where any item may hold several separated by spaces (``"7H 7S"``)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(f"a list of cards such as [9C, 7H, 7S], not {value!r}")
    cards: list[str] = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, str):
            raise ValueError(f"card {i}: a card is text such as 'TD', not {item!r}")
        for word in item.split():
            try:
                cards.append(_card_text(word))
            except ValueError as exc:
                raise ValueError(f"card {i}: {exc}") from None
    if not cards:
        raise ValueError("no cards given")
    return tuple(cards)


def _cards_arg(value: Any) -> int | tuple[str, ...]:
    """How many cards (``draw: 3``) or exactly which ones (``draw: [7H, 7S]``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_CARDS_PER_STEP:
            raise ValueError(f"a number of cards from 1 to {MAX_CARDS_PER_STEP}, not {value}")
        return value
    if isinstance(value, str | list):
        return _card_list(value)
    raise ValueError(f"a number of cards or a list of cards, not {value!r}")


PlainCard = Annotated[str, AfterValidator(_plain_card)]
CardsArg = Annotated[int | tuple[str, ...], PlainValidator(_cards_arg)]
ShoeList = Annotated[tuple[str, ...], PlainValidator(_card_list)]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def given(self) -> dict[str, Any]:
        """The fields the file gave (``null`` included), by name, in declaration order."""
        return {n: getattr(self, n) for n in type(self).model_fields if n in self.model_fields_set}


class TableBlock(_Strict):
    """The table under test (DEVICES.md, table configuration)."""

    rules: RulesName = RulesName.NY
    decks: int | None = Field(default=None, ge=1, le=8)
    positions: int = Field(default=7, ge=1, le=10)
    rfid: bool = True
    """The sensor board reads chip values; false: presence only (amounts null)."""
    limits: dict[Literal["initial", "tie"], tuple[Cents, Cents]] = Field(default_factory=dict)
    profile: dict[str, Any] = Field(default_factory=dict)
    """Overrides of the rules profile's fields, as ``[profile]`` in the table config."""
    seed: int | None = None
    """Shuffle a random shoe from this seed when the scenario lists no ``shoe``."""

    @model_validator(mode="after")
    def _valid_table(self) -> TableBlock:
        # The table config's own checks: decks allowed by the rules, positions, profile.
        table: dict[str, Any] = {
            "id": "scenario",
            "site": SITE,
            "rules": self.rules.value,
            "positions": self.positions,
            "limits": {k: list(v) for k, v in self.limits.items()},
        }
        if self.decks is not None:
            table["decks"] = self.decks
        data = {
            "table": table,
            "devices": {"shoe": "-", "console": "-"},
            "storage": {"path": "-"},
            "profile": dict(self.profile),
        }
        try:
            parse_config(data)
        except ConfigError as exc:
            raise ValueError(str(exc).replace("table.", "")) from None
        return self

    @property
    def deck_count(self) -> int:
        return self.decks if self.decks is not None else profile(self.rules).decks_default


class BrokerBlock(_Strict):
    """The broker a scenario needs when the shared one will not do."""

    own: bool = False
    """A broker of its own, not the shared one (implied by ``deny``)."""
    deny: list[TopicName] = Field(default_factory=list)
    """The table's topics the broker refuses (PUBACK 0x87 to an MQTT 5 client, MQTT.md)."""


class BetSpec(_Strict):
    """The chips on a position's three spots (cents); a spot not given is cleared."""

    position: Position
    initial: Cents | None = None
    tie: Cents | None = None
    war: Cents | None = None


_ANSWER = re.compile(r"^(ACK|NAK [A-Z][A-Z0-9_]*)$")
# Printable ASCII but the framing's ',', '$' and '*' (DEVICES.md, line framing).
_PRESS_ARG = re.compile(r"^[\x21-\x23\x25-\x29\x2b\x2d-\x7e]+$")


def _press_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a press is 'ACTION' or 'ACTION ARG' (e.g. 'WAR 1'), not {text!r}")
    words = text.split(maxsplit=1)
    action = words[0].upper()
    try:
        kind = ConsoleAction(action)
    except ValueError:
        choices = ", ".join(a.value for a in ConsoleAction)
        raise ValueError(f"unknown console action {words[0]!r}: one of {choices}") from None
    if kind.takes_arg and len(words) < 2:
        raise ValueError(f"{action} takes an argument, e.g. '{action} 1'")
    if not kind.takes_arg and len(words) > 1:
        raise ValueError(f"{action} takes no argument")
    if len(words) > 1 and not _PRESS_ARG.match(words[1]):
        # DEVICES.md line framing: fields are comma-separated printable ASCII.
        raise ValueError(f"the argument {words[1]!r} cannot travel in a frame")
    return " ".join([action, *words[1:]])


def _answer_text(text: Any) -> str:
    norm = " ".join(str(text).split()).upper()
    if not _ANSWER.match(norm):
        raise ValueError(f"'ACK' or 'NAK <REASON>' (e.g. 'NAK NOT_NOW'), not {text!r}")
    return norm


PressText = Annotated[str, PlainValidator(_press_text)]
AnswerText = Annotated[str, PlainValidator(_answer_text)]


class _Step(_Strict):
    @property
    def kind(self) -> str:
        """The step's key (``bet``, ``press``, ...)."""
        return next(k for k in type(self).model_fields if k in STEP_TYPES)

    def describe(self) -> str:
        value = getattr(self, self.kind)
        if isinstance(value, BaseModel):
            text = ", ".join(f"{k}: {_show(v)}" for k, v in _given(value).items())
            return f"{self.kind} {{{text}}}"
        if isinstance(value, tuple):
            return f"{self.kind} [{', '.join(value)}]"
        return f"{self.kind} {_show(value)}"


def _given(model: BaseModel) -> dict[str, Any]:
    return model.given() if isinstance(model, _Strict) else model.model_dump()


class BetStep(_Step):
    bet: BetSpec
    wait: bool = True
    """Wait until the controller shows the wagers now on the layout."""


class PressStep(_Step):
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


class DrawStep(_Step):
    draw: CardsArg
    """How many cards pass the reader, or exactly which (checked against the shoe)."""
    wait: bool = True
    """Wait until the controller has taken each read."""


class MisreadStep(_Step):
    misread: CardsArg
    """The next cards pass the reader unrecognised (``MISREAD``)."""
    wait: bool = True


class DropStep(_Step):
    drop: CardsArg
    """The next cards' reads are dropped on the line; the shoe sends them again on RESEND."""
    wait: bool = True


class LoseStep(_Step):
    lose: CardsArg
    """The next cards' reads are lost for good: dropped, and never sent again."""


class UnplugStep(_Step):
    unplug: Device


class ReplugStep(_Step):
    replug: Device


class HangStep(_Step):
    hang: Device
    """The device goes silent with its link up (the heartbeat watchdog's case)."""


class ResumeStep(_Step):
    resume: Device


class RestartStep(_Step):
    restart: Literal["shoe", "console", "controller"]
    """shoe: a power cycle (its read counter starts again); console: its press numbering
    starts again; controller: a clean stop and start (rebuilt from its journal)."""


class SensorFault(_Strict):
    position: Position
    spot: SpotName
    faulty: bool = True
    """false: the board stops flagging the spot (YAML 1.1 reads a key ``on`` as true)."""


class SensorFaultStep(_Step):
    sensor_fault: SensorFault


class BrokerStep(_Step):
    broker: Literal["down", "up"]
    """down: the controller's connection to the broker drops and reconnecting is refused,
    as when the broker or the network to it is away; up: it may connect again."""


class _Expect(_Step):
    timeout: Seconds | None = None


class ExpectPhaseStep(_Expect):
    expect_phase: Phase


class StateExpect(_Strict):
    """The controller's latest ``state``: only the fields given are checked."""

    phase: Phase | None = None
    held: bool | None = None
    dealer: str | None = None
    round_id: int | None = None
    cover_seen: bool | None = None
    burn_cards: int | None = None
    dealer_cards: list[PlainCard] | None = None


class ExpectStateStep(_Expect):
    expect_state: StateExpect


class AlertExpect(_Strict):
    """An alert message; without ``resolved_by``, the message that raised the alert."""

    code: AlertCode
    severity: Severity | None = None
    position: Position | None = None
    spot: WagerSpot | None = None
    resolved_by: ResolvedBy | None = None
    message: str | None = None
    """Text that the alert's message contains."""

    @model_validator(mode="before")
    @classmethod
    def _code_alone(cls, data: Any) -> Any:
        return {"code": data} if isinstance(data, str) else data


class ExpectAlertStep(_Expect):
    expect_alert: AlertExpect


class ExpectNoAlertStep(_Step):
    expect_no_alert: AlertExpect
    """No such alert seen so far: checked at once, not waited for."""


class ExpectEventStep(_Expect):
    expect_event: dict[str, Any]
    """An event whose fields equal these (``type`` required)."""

    @model_validator(mode="after")
    def _typed(self) -> ExpectEventStep:
        if not isinstance(self.expect_event.get("type"), str):
            raise ValueError("expect_event needs a 'type' (card, bets_closed, decision, ...)")
        return self


class WagerExpect(_Strict):
    amount: Cents | None = None
    odds: Annotated[str, Field(pattern=r"^\d+:\d+$")] | None = None
    result: WagerResult | None = None
    net_per_unit: float | None = None
    net: int | None = None


class PositionExpect(_Strict):
    card: PlainCard | None = None
    outcome: Outcome | None = None
    decision: Decision | None = None
    war_card: PlainCard | None = None
    war_outcome: Outcome | None = None
    net: int | None = None
    initial: WagerExpect | None = None
    tie: WagerExpect | None = None
    war: WagerExpect | None = None
    war_tie: WagerExpect | None = None


class CardExpect(_Strict):
    """A card of the record: a mapping, or ``"9C burn"``, ``"7H position 1"``,
    ``"JH position 1 manual"``, ``"- burn"`` (a card whose rank is unknown)."""

    card: PlainCard | None = None
    role: Role | None = None
    position: Position | None = None
    source: Literal["shoe", "manual"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        if not isinstance(data, str):
            return data
        words = data.split()
        if len(words) < 2:
            raise ValueError(f"a card is 'CARD ROLE [POSITION] [SOURCE]', not {data!r}")
        out: dict[str, Any] = {
            "card": None if words[0] in ("-", "?") else words[0],
            "role": words[1],
            "position": None,
        }
        rest = words[2:]
        if rest and rest[0].isdecimal():
            out["position"] = int(rest.pop(0))
        if rest:
            out["source"] = rest.pop(0)
        if rest:
            raise ValueError(f"a card is 'CARD ROLE [POSITION] [SOURCE]', not {data!r}")
        return out


class RoundExpect(_Strict):
    """A round record (``war-round/1``): only the fields given are checked; ``null`` for
    a position or a wager means that it must not be in the record."""

    round_id: int | None = None
    void: bool | None = None
    dealer: str | None = None
    rules: RulesName | None = None
    net: int | None = None
    dealer_card: PlainCard | None = None
    dealer_war_card: PlainCard | None = None
    cards: list[CardExpect] | None = None
    positions: dict[Position, PositionExpect | None] | None = None
    alerts: list[AlertCode] | None = None
    """The codes of the alerts raised in the round, in any order."""


class ExpectRoundStep(_Expect):
    expect_round: RoundExpect
    """The next round record not yet checked (or the one with ``round_id``)."""

    def describe(self) -> str:
        rid = self.expect_round.round_id
        return "expect_round" + (f" {{round_id: {rid}}}" if rid is not None else "")


STEP_TYPES: Final[dict[str, type[_Step]]] = {
    "bet": BetStep,
    "press": PressStep,
    "draw": DrawStep,
    "misread": MisreadStep,
    "drop": DropStep,
    "lose": LoseStep,
    "unplug": UnplugStep,
    "replug": ReplugStep,
    "hang": HangStep,
    "resume": ResumeStep,
    "restart": RestartStep,
    "sensor_fault": SensorFaultStep,
    "broker": BrokerStep,
    "expect_phase": ExpectPhaseStep,
    "expect_state": ExpectStateStep,
    "expect_alert": ExpectAlertStep,
    "expect_no_alert": ExpectNoAlertStep,
    "expect_event": ExpectEventStep,
    "expect_round": ExpectRoundStep,
}


def _step_kind(value: Any) -> str | None:
    if isinstance(value, _Step):
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
    | Annotated[UnplugStep, Tag("unplug")]
    | Annotated[ReplugStep, Tag("replug")]
    | Annotated[HangStep, Tag("hang")]
    | Annotated[ResumeStep, Tag("resume")]
    | Annotated[RestartStep, Tag("restart")]
    | Annotated[SensorFaultStep, Tag("sensor_fault")]
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


class Scenario(_Strict):
    """One scenario file."""

    name: str | None = None
    """Defaults to the file name without ``.yaml``."""
    description: str | None = None
    table: TableBlock = Field(default_factory=TableBlock)
    shoe: ShoeList | None = None
    """Every card in the order it passes the reader, burns included; ``COVER`` marks the
    cover card (§(h)(4)), else it follows the last card."""
    broker: BrokerBlock = Field(default_factory=BrokerBlock)
    timeout_s: Seconds = DEFAULT_TIMEOUT_S
    """The default timeout of every expectation and action."""
    steps: list[AnyStep] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if self.shoe is not None and self.shoe.count(COVER) > 1:
            raise ValueError("shoe: one COVER card at most")
        if self.shoe is not None and not [c for c in self.shoe if c != COVER]:
            raise ValueError("shoe: no cards")
        for i, step in enumerate(self.steps, 1):
            if not isinstance(step, DrawStep | MisreadStep | DropStep | LoseStep):
                continue
            cards = _cards_of(step)
            if not isinstance(cards, tuple):
                continue
            if self.shoe is None:
                raise ValueError(f"step {i} ({step.kind}): listing cards needs a 'shoe' list")
            if isinstance(step, MisreadStep) and COVER in cards:
                # The shoe recognises the cover card by its colour (simulators/shoe.py).
                raise ValueError(f"step {i} ({step.kind}): the cover card cannot be misread")
        return self

    @property
    def needs_own_broker(self) -> bool:
        return self.broker.own or bool(self.broker.deny)

    @property
    def cuts_broker(self) -> bool:
        """The controller loses the broker at some step (``broker: down``)."""
        return any(isinstance(s, BrokerStep) for s in self.steps)


def _cards_of(step: DrawStep | MisreadStep | DropStep | LoseStep) -> int | tuple[str, ...]:
    value: int | tuple[str, ...] = getattr(step, step.kind)
    return value


# ================================================================ loading


@dataclass(frozen=True, slots=True)
class LoadedScenario:
    """A validated scenario and where it came from (for reports)."""

    name: str
    scenario: Scenario
    path: Path | None = None
    step_lines: tuple[int, ...] = ()

    def line_of(self, number: int) -> int | None:
        """The line of step ``number`` (1-based) in its file."""
        return self.step_lines[number - 1] if 0 < number <= len(self.step_lines) else None


def _node_line(node: yaml.Node | None, loc: Sequence[int | str]) -> int | None:
    """The line of the deepest YAML node that ``loc`` reaches."""
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if str(k.value) == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if 0 <= part < len(node.value) else None
        else:
            node = None
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def _describe_errors(exc: ValidationError, root: yaml.Node | None) -> list[str]:
    out: list[str] = []
    for err in exc.errors():
        loc = list(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        where = ""
        if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
            kind = loc[2] if len(loc) > 2 and loc[2] in STEP_TYPES else None
            if kind is not None:
                # The discriminator's tag repeats the step's key: leave it out.
                del loc[2]
            where = f"step {loc[1] + 1}" + (f" ({kind})" if kind else "")
            field_path = ".".join(str(p) for p in loc[2:])
        elif len(loc) >= 2 and loc[0] == "shoe":
            field_path = "shoe"
        else:
            field_path = ".".join(str(p) for p in loc)
        line = _node_line(root, loc)
        parts = [p for p in (f"line {line}" if line else "", where, field_path) if p]
        out.append(": ".join([*parts, msg]))
    return out


def parse_scenario(text: str, *, name: str, path: Path | None = None) -> LoadedScenario:
    """Validate a scenario's YAML text; a ScenarioError names every bad field."""
    where = str(path) if path is not None else name
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: a scenario is a mapping with 'table', 'shoe' and 'steps'")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = _describe_errors(exc, root)
        raise ScenarioError(f"{where}: " + "\n  ".join(problems)) from None
    lines: tuple[int, ...] = ()
    if isinstance(root, yaml.MappingNode):
        steps = next((v for k, v in root.value if k.value == "steps"), None)
        if isinstance(steps, yaml.SequenceNode):
            lines = tuple(item.start_mark.line + 1 for item in steps.value)
    return LoadedScenario(scenario.name or name, scenario, path, lines)


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate one scenario file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read: {exc.strerror}") from None
    return parse_scenario(text, name=p.stem, path=p)


def shipped_dir() -> Path:
    """The folder of the scenarios shipped with the package."""
    return Path(str(importlib.resources.files(SHIPPED_PACKAGE)))


def shipped_scenarios() -> list[Path]:
    """Every scenario shipped with the package, by file name."""
    return sorted(shipped_dir().glob("*.yaml"))


def scenario_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, and every ``*.yaml`` of a folder given, in name order."""
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        out.extend(sorted(p.glob("*.yaml")) if p.is_dir() else [p])
    return out


# ================================================================ results


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class StepResult:
    """One expectation (or a step that could not be carried out) and how it went."""

    number: int
    """The step's number, from 1; 0 for the rig's own start."""
    line: int | None
    step: str
    status: Status
    detail: str = ""
    """What was seen instead, or what went wrong; empty when it passed."""
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    name: str
    path: Path | None
    started: datetime
    seconds: float
    results: tuple[StepResult, ...]

    @property
    def failures(self) -> list[StepResult]:
        return [r for r in self.results if r.status is Status.FAIL]

    @property
    def errors(self) -> list[StepResult]:
        return [r for r in self.results if r.status is Status.ERROR]

    @property
    def passed(self) -> bool:
        return all(r.status is Status.PASS for r in self.results)


class _StepFailed(Exception):
    """The controller did not do what a step needs; the rest of the scenario cannot run."""


# ================================================================ the rig's shoe


class _RigShoe(ShoeSimulator):
    """The simulated shoe, which can also lose a read for good (``lose``).

    A lost read takes its number but its frame never goes out, neither at the
    draw nor in answer to ``RESEND``: the controller sees a gap that no resend
    fills (DEVICES.md: ``SHOE_READ_GAP``).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lost_reads: set[int] = set()

    def send_frame(self, frame: LineFrame) -> bool:
        if isinstance(frame, CardFrame | MisreadFrame | CoverFrame) and frame.n in self.lost_reads:
            return False
        return super().send_frame(frame)

    def power_cycle(self) -> None:
        self.lost_reads.clear()
        super().power_cycle()


class _BrokerGate:
    """A TCP forwarder between the controller and the broker, to take the broker away.

    ``close()`` drops every connection through it and refuses new ones, which the
    controller sees exactly as a broker gone away; ``open()`` lets it connect
    again. The rig's observer talks to the broker directly, so it misses nothing
    the controller publishes when it is back.
    """

    def __init__(self, broker_url: str) -> None:
        address = parse_broker_url(broker_url)
        self.target = (address.host, address.port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    async def open(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        if self._pumps:
            await asyncio.gather(*self._pumps, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            self._writers.discard(writer)
            writer.transport.abort()
            return
        self._writers.add(up_writer)
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer), name="broker-gate-up"),
            asyncio.create_task(self._pump(up_reader, writer), name="broker-gate-down"),
        ]
        self._pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in (writer, up_writer):
                w.transport.abort()
                self._writers.discard(w)
            await asyncio.gather(*pumps, return_exceptions=True)
            self._pumps.difference_update(pumps)

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()


# ================================================================ comparing


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


def _equal(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    if isinstance(want, int | float) and isinstance(got, int | float):
        return float(want) == float(got)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_equal(w, g) for w, g in zip(want, got, strict=True))
    return bool(want == got)


def _same(path: str, want: Any, got: Any, diffs: list[str]) -> None:
    if not _equal(want, got):
        diffs.append(f"{path}: expected {_show(want)}, saw {_show(got)}")


def _card_line(card: Any, role: Any, position: Any, source: Any) -> str:
    text = f"{card or '-'} {_show(role)}"
    if position is not None:
        text += f" {position}"
    if source == "manual":
        text += " manual"
    return text


def _diff_cards(want: list[CardExpect], got: list[dict[str, Any]], diffs: list[str]) -> None:
    same = len(want) == len(got) and all(
        all(_equal(v, g.get(k)) for k, v in w.given().items())
        for w, g in zip(want, got, strict=True)
    )
    if same:
        return
    expected = [_card_line(w.card, w.role, w.position, w.source) for w in want]
    seen = [_card_line(g["card"], g["role"], g["position"], g["source"]) for g in got]
    first = next(
        (i for i, (w, g) in enumerate(zip(expected, seen, strict=False)) if w != g),
        min(len(expected), len(seen)),
    )
    diffs.append(
        f"cards: first difference at card {first + 1}: expected [{', '.join(expected)}], "
        f"saw [{', '.join(seen)}]"
    )


WAGER_SPOTS: Final = ("initial", "tie", "war", "war_tie")


def _wager_line(w: dict[str, Any]) -> str:
    return f"{w['result']} {_show(w['net'])}"


def _diff_positions(
    want: dict[int, PositionExpect | None], got: list[dict[str, Any]], diffs: list[str]
) -> None:
    by_position = {p["position"]: p for p in got}
    for pos, expect in want.items():
        seen = by_position.get(pos)
        path = f"positions.{pos}"
        if expect is None:
            if seen is not None:
                diffs.append(
                    f"{path}: expected no such position, saw it (net {_show(seen['net'])})"
                )
            continue
        if seen is None:
            diffs.append(f"{path}: not in the record (positions {sorted(by_position)})")
            continue
        wagers = {w["spot"]: w for w in seen["wagers"]}
        for name, value in expect.given().items():
            if name not in WAGER_SPOTS:
                _same(f"{path}.{name}", value, seen.get(name), diffs)
                continue
            wager = wagers.get(name)
            if value is None:
                if wager is not None:
                    diffs.append(f"{path}.{name}: expected no such wager, saw {_wager_line(wager)}")
            elif wager is None:
                diffs.append(
                    f"{path}.{name}: no such wager (wagers: {', '.join(wagers) or 'none'})"
                )
            else:
                for key, v in value.given().items():
                    _same(f"{path}.{name}.{key}", v, wager.get(key), diffs)


def _diff_round(expect: RoundExpect, record: dict[str, Any], codes: dict[str, str]) -> list[str]:
    diffs: list[str] = []
    for name, want in expect.given().items():
        if name == "cards":
            _diff_cards(want, record.get("cards", []), diffs)
        elif name == "positions":
            _diff_positions(want, record.get("positions", []), diffs)
        elif name == "alerts":
            seen = sorted(codes.get(a, f"unknown alert {a}") for a in record.get("alerts", []))
            expected = sorted(c.value for c in want)
            if seen != expected:
                diffs.append(f"alerts: expected {_show(expected)}, saw {_show(seen)}")
        else:
            _same(name, want, record.get(name), diffs)
    return diffs


def _alert_matches(expect: AlertExpect, alert: dict[str, Any]) -> bool:
    given = expect.given()
    given.setdefault("resolved_by", None)
    for key, want in given.items():
        if key == "message":
            if want not in str(alert.get("message", "")):
                return False
        elif key not in alert or not _equal(want, alert[key]):
            return False
    return True


def _alert_line(alert: dict[str, Any]) -> str:
    text = f"{alert['code']} ({alert['severity']}"
    if alert.get("position") is not None:
        text += f", P{alert['position']}"
    if alert.get("spot") is not None:
        text += f" {alert['spot']}"
    resolved = alert.get("resolved_by")
    return text + (f", resolved by {resolved})" if resolved else ", raised)")


def _event_line(event: dict[str, Any]) -> str:
    skip = {"schema", "id", "table", "site", "ts", "seq", "epoch", "type"}
    fields = ", ".join(f"{k}: {_show(v)}" for k, v in event.items() if k not in skip)
    return f"{event['type']} {{{fields}}}"


# ================================================================ playing a scenario


class _Runner:
    """Plays one scenario's steps on a started rig and collects the results."""

    def __init__(self, loaded: LoadedScenario, rig: TableRig, gate: _BrokerGate | None):
        self.loaded = loaded
        self.scenario = loaded.scenario
        self.rig = rig
        self.shoe: _RigShoe = rig.shoe  # type: ignore[assignment]
        self.gate = gate
        self.results: list[StepResult] = []
        self.unplugged: set[str] = set()
        self.silent: set[str] = set()
        self.broker_down = False
        self.pending: list[tuple[int, PressStep, int, float]] = []
        self.used_alerts: set[tuple[str, str | None]] = set()
        self.used_events: set[str] = set()
        self.used_rounds: set[int] = set()
        # Read numbers start again after a shoe power cycle: older evidence is ignored.
        self.events_floor = 0
        self.alerts_floor = 0
        self.loop = asyncio.get_running_loop()

    @property
    def obs(self) -> Observer:
        assert self.rig.observer is not None
        return self.rig.observer

    def _quiet(self, device: str) -> bool:
        return device in self.unplugged or device in self.silent

    # -- bookkeeping ---------------------------------------------------------------

    def _record(
        self, number: int, step: _Step | str, status: Status, detail: str, since: float
    ) -> None:
        text = step if isinstance(step, str) else step.describe()
        line = self.loaded.line_of(number)
        seconds = round(self.loop.time() - since, 3)
        self.results.append(StepResult(number, line, text, status, detail, seconds))

    async def _until(self, check: Callable[[], T | None], timeout: float) -> T | None:
        """The first non-None ``check()`` as messages arrive, or None after ``timeout``."""
        found: list[T] = []

        def accept(_: Observer) -> bool:
            value = check()
            if value is None:
                return False
            found.append(value)
            return True

        with contextlib.suppress(TimeoutError):
            await self.obs.wait(accept, timeout)
        return found[0] if found else None

    def _alerts(self) -> list[dict[str, Any]]:
        """Every alert message seen, from ``alerts`` and (when that topic is denied) the
        alert events; one per (alert, resolved_by)."""
        seen: dict[tuple[str, str | None], dict[str, Any]] = {}
        for msg in self.obs.of("alerts"):
            seen.setdefault((msg["alert"], msg.get("resolved_by")), msg)
        for ev in self.obs.of("events"):
            if ev.get("type") == "alert":
                seen.setdefault((ev["alert"], ev.get("resolved_by")), ev)
        return list(seen.values())

    def _status_devices(self) -> dict[str, str]:
        status = self.obs.last("status")
        if status is None:
            return {}
        return {name: d["state"] for name, d in status["devices"].items()}

    # -- start and end -------------------------------------------------------------

    async def ready(self) -> None:
        """Wait until the controller says it is online with every device ok."""

        def online() -> bool | None:
            status = self.obs.last("status")
            ok = status is not None and status["online"]
            return True if ok and set(self._status_devices().values()) == {"ok"} else None

        if await self._until(online, ONLINE_TIMEOUT_S) is None:
            raise _StepFailed(
                f"the controller did not report itself and its devices online within "
                f"{ONLINE_TIMEOUT_S:g} s; devices: {_show(self._status_devices())}"
            )

    async def play(self) -> None:
        for number, step in enumerate(self.scenario.steps, 1):
            since = self.loop.time()
            try:
                verdict = await self._play(number, step)
            except _StepFailed as exc:
                self._record(number, step, Status.FAIL, str(exc), since)
                return
            except (ShoeEmptyError, OSError, RuntimeError, ValueError) as exc:
                self._record(number, step, Status.ERROR, f"{type(exc).__name__}: {exc}", since)
                return
            if verdict is not None:
                self._record(number, step, verdict[0], verdict[1], since)
        await self._settle_pending(final=True)

    async def close(self) -> None:
        """Put the broker back, so that the controller's last status goes out at its stop."""
        if self.broker_down and self.gate is not None:
            await self.gate.open()
            self.broker_down = False

    # -- steps ---------------------------------------------------------------------

    async def _play(self, number: int, step: _Step) -> tuple[Status, str] | None:
        timeout = self.scenario.timeout_s
        if isinstance(step, _Expect) and step.timeout is not None:
            timeout = step.timeout
        match step:
            case BetStep():
                await self._bet(step, timeout)
            case PressStep():
                return await self._press(number, step, timeout)
            case DrawStep() | MisreadStep() | DropStep() | LoseStep():
                await self._cards(step, timeout)
            case UnplugStep():
                await self._unplug(step.unplug, timeout)
            case ReplugStep():
                await self._replug(step.replug, timeout)
            case HangStep():
                self._hang(step.hang, on=True)
            case ResumeStep():
                self._hang(step.resume, on=False)
                await self._back(step.resume, timeout)
            case RestartStep():
                await self._restart(step.restart, timeout)
            case SensorFaultStep():
                fault = step.sensor_fault
                bit = (fault.position - 1) * 3 + SPOT_NUMBERS[fault.spot]
                self.rig.board.set_fault(bit, fault.faulty)
            case BrokerStep():
                await self._broker(step.broker, timeout)
            case ExpectPhaseStep():
                return await self._expect_state(StateExpect(phase=step.expect_phase), timeout)
            case ExpectStateStep():
                return await self._expect_state(step.expect_state, timeout)
            case ExpectAlertStep():
                return await self._expect_alert(step.expect_alert, timeout)
            case ExpectNoAlertStep():
                return self._expect_no_alert(step.expect_no_alert)
            case ExpectEventStep():
                return await self._expect_event(step.expect_event, timeout)
            case ExpectRoundStep():
                return await self._expect_round(step.expect_round, timeout)
        return None

    def _layout(self) -> dict[int, dict[str, int | None]]:
        """The wagers on the board now, as the controller's state should show them."""
        names = {v: k for k, v in SPOT_NUMBERS.items()}
        out: dict[int, dict[str, int | None]] = {}
        for bit, cents in self.rig.board.values:
            position, spot = bit // 3 + 1, bit % 3
            out.setdefault(position, {})[names[spot]] = cents if self.rig.spec.rfid else None
        return out

    def _shown(self) -> dict[int, dict[str, int | None]]:
        state = self.obs.last("state")
        if state is None:
            return {}
        out: dict[int, dict[str, int | None]] = {}
        for p in state["positions"]:
            wagers = {k: v for k, v in p["wagers"].items() if k in SPOT_NUMBERS}
            if wagers:
                out[p["position"]] = wagers
        return out

    async def _bet(self, step: BetStep, timeout: float) -> None:
        spec = step.bet
        self.rig.bet(spec.position, initial=spec.initial, tie=spec.tie, war=spec.war)
        if not step.wait or self._quiet("sensors") or self.broker_down:
            return
        want = self._layout()
        if await self._until(lambda: True if self._shown() == want else None, timeout) is None:
            raise _StepFailed(
                f"the controller did not show the wagers {_show(want)} within {timeout:g} s; "
                f"it shows {_show(self._shown())}"
            )

    async def _answer(self, k: int, timeout: float) -> str:
        try:
            async with asyncio.timeout(timeout):
                answer = await self.rig.console.answer(k)
        except TimeoutError:
            raise _StepFailed(f"press {k} got no answer within {timeout:g} s") from None
        except ConsoleRestartedError:
            raise _StepFailed(f"the console restarted before press {k} was answered") from None
        return f"NAK {answer.reason}" if isinstance(answer, NakFrame) else "ACK"

    @staticmethod
    def _judge(step: PressStep, answer: str) -> tuple[Status, str] | None:
        if step.expect is None:
            return None
        if answer == step.expect:
            return Status.PASS, ""
        return Status.FAIL, f"answered {answer}"

    async def _press(
        self, number: int, step: PressStep, timeout: float
    ) -> tuple[Status, str] | None:
        k = self.rig.console.press(step.action, step.arg)
        if self._quiet("console"):
            # Sent (again) when the console is back; judged then (DEVICES.md: the
            # console sends an unanswered press again after a reconnect).
            self.pending.append((number, step, k, self.loop.time()))
            return None
        return self._judge(step, await self._answer(k, timeout))

    async def _settle_pending(self, *, final: bool = False) -> None:
        pending, self.pending = self.pending, []
        for number, step, k, since in pending:
            if final and self._quiet("console"):
                if step.expect is not None:
                    detail = f"press {k} was never answered: the console was not back"
                    self._record(number, step, Status.FAIL, detail, since)
                continue
            verdict = self._judge(step, await self._answer(k, self.scenario.timeout_s))
            if verdict is not None:
                self._record(number, step, verdict[0], verdict[1], since)

    def _taken(self, n: int, cover: bool) -> bool:
        """The controller has taken read ``n``: a card event for it, an alert about it,
        or (the cover card) the shoe marked for reshuffle."""
        if cover:
            state = self.obs.last("state")
            return state is not None and (
                state["shoe"]["cover_seen"] or state["phase"] == Phase.SHUFFLE_DUE.value
            )
        events = self.obs.of("events")[self.events_floor :]
        if any(e.get("type") == "card" and e.get("n") == n for e in events):
            return True
        prefix = f"read {n}:"
        alerts = self.obs.of("alerts")[self.alerts_floor :]
        return any(str(a.get("message", "")).startswith(prefix) for a in alerts)

    async def _cards(
        self, step: DrawStep | MisreadStep | DropStep | LoseStep, timeout: float
    ) -> None:
        spec = _cards_of(step)
        count = spec if isinstance(spec, int) else len(spec)
        shoe = self.shoe
        reads: list[tuple[int, bool, str]] = []
        for i in range(count):
            order = shoe.order
            index = len(order) - shoe.remaining
            if index >= len(order):
                raise _StepFailed(f"the shoe is empty (card {i + 1} of {count} of this step)")
            physical = order[index]
            text = COVER if physical is None else str(physical)
            if isinstance(spec, tuple) and spec[i] != text:
                raise _StepFailed(
                    f"the shoe's next card is {text}, not {spec[i]} (card {i + 1} of this step)"
                )
            read = shoe.draw(
                misread=isinstance(step, MisreadStep), drop=isinstance(step, DropStep | LoseStep)
            )
            if isinstance(step, LoseStep):
                shoe.lost_reads.add(read.n)
            reads.append((read.n, physical is None, text))
        if isinstance(step, LoseStep) or not step.wait or self._quiet("shoe") or self.broker_down:
            return
        for n, cover, text in reads:
            if await self._until(self._taken_check(n, cover), timeout):
                continue
            raise _StepFailed(
                f"the controller did not take read {n} ({text}) within {timeout:g} s: no card "
                f"event and no alert for it; last state: {_show(self._state_brief())}"
            )

    def _taken_check(self, n: int, cover: bool) -> Callable[[], bool | None]:
        return lambda: True if self._taken(n, cover) else None

    def _state_brief(self) -> dict[str, Any]:
        state = self.obs.last("state")
        if state is None:
            return {}
        return {
            "phase": state["phase"],
            "held": state["held"],
            "round_id": state["round_id"],
            "cards_read": state["shoe"]["cards_read"],
        }

    def _port(self, device: str) -> int:
        assert self.rig.config is not None
        url = self.rig.config.devices.shoe if device == "shoe" else self.rig.config.devices.console
        return int(url.rsplit(":", 1)[1])

    async def _device_state(self, device: str, want: str, timeout: float) -> None:
        """Wait until the controller's status shows ``device`` in state ``want``."""
        if self.broker_down:
            return

        def shows() -> bool | None:
            return True if self._status_devices().get(device) == want else None

        if await self._until(shows, timeout) is None:
            raise _StepFailed(
                f"the controller did not report the {device} {want} within {timeout:g} s; "
                f"devices: {_show(self._status_devices())}"
            )

    async def _unplug(self, device: str, timeout: float) -> None:
        if device == "shoe":
            await self.shoe.stop_serving()
        elif device == "console":
            await self.rig.console.stop_serving()
        else:
            await self.rig.board.unplug()
        self.unplugged.add(device)
        await self._device_state(device, "offline", timeout)

    async def _replug(self, device: str, timeout: float) -> None:
        if device not in self.unplugged:
            raise _StepFailed(f"the {device} is not unplugged")
        if device == "shoe":
            await self.shoe.serve_tcp(port=self._port("shoe"))
        elif device == "console":
            await self.rig.console.serve_tcp(port=self._port("console"))
        else:
            await self.rig.board.replug()
        self.unplugged.discard(device)
        await self._back(device, timeout)

    def _hang(self, device: str, *, on: bool) -> None:
        if device == "shoe":
            self.shoe.hang() if on else self.shoe.resume()
        elif device == "console":
            self.rig.console.hang() if on else self.rig.console.resume()
        else:
            self.rig.board.mute(on)
        if on:
            self.silent.add(device)
        else:
            self.silent.discard(device)

    async def _back(self, device: str, timeout: float) -> None:
        if self._quiet(device):
            return
        await self._device_state(device, "ok", timeout)
        if device == "console":
            await self._settle_pending()

    async def _restart(self, what: str, timeout: float) -> None:
        if what == "shoe":
            self.events_floor = len(self.obs.of("events"))
            self.alerts_floor = len(self.obs.of("alerts"))
            self.shoe.power_cycle()
        elif what == "console":
            for number, step, k, since in self.pending:
                if step.expect is not None:
                    detail = f"the console restarted before press {k} was answered"
                    self._record(number, step, Status.FAIL, detail, since)
            self.pending = []
            self.rig.console.restart()
        else:
            before = len(self.obs.of("status"))
            await self.rig.stop_controller()
            await self.rig.start_controller()
            up = {"shoe", "console", "sensors"} - self.unplugged - self.silent

            def online() -> bool | None:
                fresh = self.obs.of("status")[before:]
                devices = self._status_devices()
                ok = any(s["online"] for s in fresh) and all(devices.get(d) == "ok" for d in up)
                return True if ok else None

            if not self.broker_down and await self._until(online, ONLINE_TIMEOUT_S) is None:
                raise _StepFailed(
                    f"the controller did not come back online within {ONLINE_TIMEOUT_S:g} s; "
                    f"devices: {_show(self._status_devices())}"
                )

    async def _broker(self, what: str, timeout: float) -> None:
        gate = self.gate
        assert gate is not None  # run_scenario puts one in front of the broker
        if what == "down":
            await gate.close()
            self.broker_down = True
            return
        before = len(self.obs.of("status"))
        await gate.open()
        self.broker_down = False

        # The controller connects again and says so (MQTT.md: status on every connect).
        def online() -> bool | None:
            return True if any(s["online"] for s in self.obs.of("status")[before:]) else None

        if await self._until(online, max(timeout, ONLINE_TIMEOUT_S)) is None:
            raise _StepFailed(
                f"the controller did not reconnect to the broker within {timeout:g} s"
            )

    # -- expectations ----------------------------------------------------------------

    async def _expect_state(self, expect: StateExpect, timeout: float) -> tuple[Status, str]:
        def diffs() -> list[str]:
            state = self.obs.last("state")
            if state is None:
                return ["no state published"]
            seen = {
                "phase": state["phase"],
                "held": state["held"],
                "dealer": state["dealer"],
                "round_id": state["round_id"],
                "cover_seen": state["shoe"]["cover_seen"],
                "burn_cards": state["burn_cards"],
                "dealer_cards": state["dealer_cards"],
            }
            out: list[str] = []
            for key, want in expect.given().items():
                _same(key, want, seen[key], out)
            return out

        if await self._until(lambda: None if diffs() else True, timeout):
            return Status.PASS, ""
        return Status.FAIL, f"after {timeout:g} s: " + "; ".join(diffs())

    async def _expect_alert(self, expect: AlertExpect, timeout: float) -> tuple[Status, str]:
        def find() -> tuple[str, str | None] | None:
            for alert in self._alerts():
                key = (alert["alert"], alert.get("resolved_by"))
                if key not in self.used_alerts and _alert_matches(expect, alert):
                    return key
            return None

        key = await self._until(find, timeout)
        if key is not None:
            self.used_alerts.add(key)
            return Status.PASS, ""
        others = [
            _alert_line(a)
            for a in self._alerts()
            if (a["alert"], a.get("resolved_by")) not in self.used_alerts
        ]
        seen = "; ".join(others) if others else "no other alerts"
        return Status.FAIL, f"not seen within {timeout:g} s; saw {seen}"

    def _expect_no_alert(self, expect: AlertExpect) -> tuple[Status, str]:
        found = [_alert_line(a) for a in self._alerts() if _alert_matches(expect, a)]
        if found:
            return Status.FAIL, "saw " + "; ".join(found)
        return Status.PASS, ""

    async def _expect_event(self, expect: dict[str, Any], timeout: float) -> tuple[Status, str]:
        def find() -> str | None:
            for event in self.obs.of("events"):
                if event["id"] in self.used_events:
                    continue
                if all(k in event and _equal(v, event[k]) for k, v in expect.items()):
                    return str(event["id"])
            return None

        found = await self._until(find, timeout)
        if found is not None:
            self.used_events.add(found)
            return Status.PASS, ""
        same_type = [
            _event_line(e)
            for e in self.obs.of("events")
            if e.get("type") == expect["type"] and e["id"] not in self.used_events
        ]
        if same_type:
            seen = "; ".join(same_type[-6:])
        else:
            seen = f"no other {expect['type']} event; last events: " + "; ".join(
                _event_line(e) for e in self.obs.of("events")[-6:]
            )
        return Status.FAIL, f"not seen within {timeout:g} s; saw {seen}"

    async def _expect_round(self, expect: RoundExpect, timeout: float) -> tuple[Status, str]:
        def pick() -> int | None:
            for i, record in enumerate(self.obs.of("rounds")):
                if i in self.used_rounds:
                    continue
                if expect.round_id is None or record.get("round_id") == expect.round_id:
                    return i
            return None

        index = await self._until(pick, timeout)
        if index is None:
            ids = [r.get("round_id") for r in self.obs.of("rounds")]
            which = "" if expect.round_id is None else f" for round {expect.round_id}"
            return Status.FAIL, (
                f"no round record{which} within {timeout:g} s (records seen: rounds "
                f"{_show(ids)}, all checked); last state: {_show(self._state_brief())}"
            )
        self.used_rounds.add(index)
        record = self.obs.of("rounds")[index]
        codes = {a["alert"]: a["code"] for a in self._alerts()}
        diffs = _diff_round(expect, record, codes)
        if diffs:
            return Status.FAIL, f"round {record.get('round_id')}: " + "; ".join(diffs)
        return Status.PASS, ""


def _table_id(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-_.")[:40] or "scenario"
    return f"{slug}-{uuid.uuid4().hex[:6]}"


def _table_spec(loaded: LoadedScenario, table_id: str) -> TableSpec:
    sc = loaded.scenario
    t = sc.table
    cards: list[Card] | None = None
    cover_after: int | None = None
    if sc.shoe is not None:
        cards = [Card.parse(c) for c in sc.shoe if c != COVER]
        cover_after = sc.shoe.index(COVER) if COVER in sc.shoe else len(cards)
    return TableSpec(
        table_id=table_id,
        site=SITE,
        rules=t.rules.value,
        decks=t.deck_count,
        positions=t.positions,
        rfid=t.rfid,
        seed=t.seed,
        cards=cards,
        cover_after=cover_after,
        limits={str(k): v for k, v in t.limits.items()},
        profile=dict(t.profile),
    )


def _own_broker(scenario: Scenario, prefix: str, workdir: Path) -> MosquittoBroker:
    port = free_port()
    lines = [
        f"listener {port} 127.0.0.1",
        "allow_anonymous true",
        "persistence false",
        "max_queued_messages 100000",
    ]
    if scenario.broker.deny:
        # Rules before any `user` line apply to clients without a username, as the
        # rig's are; mosquitto 2.0 lets a `deny` win over the grant of `#`.
        # Started as root, mosquitto reads the ACL after dropping to its own user:
        # the folder must let it through and the file be readable (nothing secret).
        workdir.chmod(0o711)
        acl = workdir / "broker.acl"
        acl.write_text(
            "topic readwrite #\n"
            + "".join(f"topic deny {prefix}/{topic}\n" for topic in scenario.broker.deny),
            encoding="utf-8",
        )
        acl.chmod(0o644)
        lines.append(f"acl_file {acl}")
    return MosquittoBroker(port, config_text="\n".join(lines) + "\n")


async def _clear_retained(url: str, prefix: str) -> None:
    """Leave no retained status/state/stats of the scenario's table on a shared broker."""
    address = parse_broker_url(url)
    with contextlib.suppress(aiomqtt.MqttError, OSError, TimeoutError):
        async with (
            asyncio.timeout(DEFAULT_TIMEOUT_S),
            aiomqtt.Client(
                address.host, address.port, protocol=aiomqtt.ProtocolVersion.V5
            ) as client,
        ):
            for topic in RETAINED_TOPICS:
                await client.publish(f"{prefix}/{topic}", b"", qos=1, retain=True)


async def run_scenario(loaded: LoadedScenario, *, broker_url: str | None = None) -> ScenarioResult:
    """Play one scenario against a controller; ``broker_url`` None: a broker of its own.

    A scenario that stops the broker or needs access rules always gets one of its own.
    """
    loop = asyncio.get_running_loop()
    since = loop.time()
    started = datetime.now(UTC)
    scenario = loaded.scenario
    results: list[StepResult] = []
    table_id = _table_id(loaded.name)
    own: MosquittoBroker | None = None
    gate: _BrokerGate | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="scenario-") as tmp:
            workdir = Path(tmp)
            spec = _table_spec(loaded, table_id)
            prefix = f"casino/{spec.site}/table/{spec.table_id}"
            if broker_url is None or scenario.needs_own_broker:
                own = _own_broker(scenario, prefix, workdir)
                own.start()
            url = own.url if own is not None else broker_url
            assert url is not None
            if scenario.cuts_broker:
                gate = _BrokerGate(url)
                await gate.open()
            rig = TableRig(gate.url if gate is not None else url, workdir, spec)
            # The rig's shoe, as the simulator plus lost reads (``lose``).
            rig.shoe = _RigShoe(
                decks=spec.decks, seed=spec.seed, cards=spec.cards, cover_after=spec.cover_after
            )
            runner: _Runner | None = None
            try:
                async with rig:
                    if gate is not None:
                        # The controller goes through the gate, the observer straight
                        # to the broker: it sees what comes when the broker is back.
                        assert rig.observer is not None
                        await rig.observer.close()
                        rig.observer = Observer(url, f"{rig.prefix}/#")
                        await rig.observer.start()
                    runner = _Runner(loaded, rig, gate)
                    await rig.start_controller()
                    try:
                        await runner.ready()
                    except _StepFailed as exc:
                        runner.results.append(
                            StepResult(0, None, "start the table", Status.ERROR, str(exc))
                        )
                    else:
                        try:
                            await runner.play()
                        finally:
                            await runner.close()
            finally:
                if runner is not None:
                    results.extend(runner.results)
            if own is None:
                await _clear_retained(url, prefix)
    except Exception as exc:  # the rig itself failed: report it with the scenario
        log.exception("scenario %s could not run", loaded.name)
        if isinstance(exc, TimeoutError) and not str(exc):
            exc = TimeoutError(f"no answer in time from the broker at {broker_url or 'localhost'}")
        results.append(
            StepResult(0, None, "run the rig", Status.ERROR, f"{type(exc).__name__}: {exc}")
        )
    finally:
        if gate is not None:
            await gate.close()
        if own is not None:
            own.close()
    return ScenarioResult(
        loaded.name, loaded.path, started, round(loop.time() - since, 3), tuple(results)
    )


async def run_scenarios(
    scenarios: Sequence[LoadedScenario],
    *,
    broker_url: str | None = None,
    progress: Callable[[ScenarioResult], None] | None = None,
) -> list[ScenarioResult]:
    """Play scenarios one after another on one broker (``broker_url``, or one started
    here); those that need a broker of their own get one."""
    shared: MosquittoBroker | None = None
    if broker_url is None and any(not s.scenario.needs_own_broker for s in scenarios):
        shared = MosquittoBroker()
        shared.start()
        broker_url = shared.url
    results: list[ScenarioResult] = []
    try:
        for loaded in scenarios:
            result = await run_scenario(loaded, broker_url=broker_url)
            results.append(result)
            if progress is not None:
                progress(result)
    finally:
        if shared is not None:
            shared.close()
    return results


# ================================================================ reports


def _where(result: ScenarioResult) -> str:
    return f" ({result.path})" if result.path is not None else ""


def _step_label(r: StepResult) -> str:
    label = f"step {r.number}" if r.number else "setup"
    if r.line is not None:
        label += f" (line {r.line})"
    return f"{label} {r.step}"


def format_result(result: ScenarioResult, *, verbose: bool = False) -> str:
    """One scenario's report: a verdict line, then each failure (every step if verbose)."""
    checked = len(result.results)
    bad = len(result.failures) + len(result.errors)
    verdict = "PASS" if result.passed else ("ERROR" if result.errors else "FAIL")
    summary = f"{checked} expectations" if not bad else f"{bad} of {checked} not met"
    lines = [f"{verdict:<5} {result.name}{_where(result)}: {summary}, {result.seconds:.1f} s"]
    for r in result.results:
        if r.status is Status.PASS and not verbose:
            continue
        mark = {Status.PASS: "ok", Status.FAIL: "FAIL", Status.ERROR: "ERROR"}[r.status]
        text = f"  {mark:<5} {_step_label(r)}"
        lines.append(f"{text}: {r.detail}" if r.detail else text)
    return "\n".join(lines)


def format_report(results: Sequence[ScenarioResult], *, verbose: bool = False) -> str:
    passed = sum(1 for r in results if r.passed)
    body = [format_result(r, verbose=verbose) for r in results]
    seconds = sum(r.seconds for r in results)
    body.append(f"{passed} of {len(results)} scenarios passed in {seconds:.1f} s")
    return "\n".join(body)


def junit_xml(results: Sequence[ScenarioResult]) -> str:
    """A JUnit XML report: a ``testsuite`` per scenario, a ``testcase`` per expectation."""
    root = ET.Element("testsuites", name="scenarios")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    for result in results:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=result.name,
            tests=str(len(result.results)),
            failures=str(len(result.failures)),
            errors=str(len(result.errors)),
            skipped="0",
            time=f"{result.seconds:.3f}",
            timestamp=result.started.replace(tzinfo=None).isoformat(timespec="seconds"),
        )
        if result.path is not None:
            suite.set("file", str(result.path))
        for r in result.results:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"scenarios.{result.name}",
                name=_step_label(r),
                time=f"{r.seconds:.3f}",
            )
            if result.path is not None:
                case.set("file", str(result.path))
                if r.line is not None:
                    case.set("line", str(r.line))
            if r.status is Status.FAIL:
                fail = ET.SubElement(case, "failure", message=r.detail, type="ExpectationNotMet")
                fail.text = r.detail
            elif r.status is Status.ERROR:
                err = ET.SubElement(case, "error", message=r.detail, type="ScenarioError")
                err.text = r.detail
        totals["tests"] += len(result.results)
        totals["failures"] += len(result.failures)
        totals["errors"] += len(result.errors)
        total_time += result.seconds
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# ================================================================ the command


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run_p = sub.add_parser("run", help="play scenario files against the controller")
    run_p.add_argument("files", nargs="*", type=Path, help="scenario files or folders")
    run_p.add_argument(
        "--shipped", action="store_true", help="also every scenario shipped with the package"
    )
    run_p.add_argument("--broker", metavar="URL", help="mqtt://HOST:PORT (default: start one)")
    run_p.add_argument("--junit", type=Path, metavar="OUT.xml", help="write a JUnit XML report")
    run_p.add_argument("-v", "--verbose", action="store_true", help="list passed steps too")
    run_p.add_argument(
        "--log-level",
        default="CRITICAL",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="the controller's log on stderr (faults are expected: quiet by default)",
    )
    check_p = sub.add_parser("check", help="validate scenario files without playing them")
    check_p.add_argument("files", nargs="*", type=Path, help="scenario files or folders")
    check_p.add_argument("--shipped", action="store_true", help="the shipped scenarios too")


def _load_all(args: argparse.Namespace) -> list[LoadedScenario] | None:
    files = scenario_files(args.files) + (shipped_scenarios() if args.shipped else [])
    if not files:
        print("table-controller scenario: no scenario files given", file=sys.stderr)
        return None
    loaded: list[LoadedScenario] = []
    bad = False
    for path in files:
        try:
            loaded.append(load_scenario(path))
        except ScenarioError as exc:
            print(exc, file=sys.stderr)
            bad = True
    return None if bad else loaded


def _broker_problem(url: str) -> str | None:
    """Why the broker at ``url`` cannot be used, or None."""
    try:
        address = parse_broker_url(url)
    except ValueError as exc:
        return str(exc)
    try:
        with socket.create_connection((address.host, address.port), timeout=3.0):
            return None
    except OSError as exc:
        return f"cannot reach the broker at {url}: {exc.strerror or exc}"


def run(args: argparse.Namespace) -> int:
    loaded = _load_all(args)
    if loaded is None:
        return 2
    if args.action == "check":
        for s in loaded:
            print(f"ok    {s.name} ({s.path}): {len(s.scenario.steps)} steps")
        return 0
    if args.broker is not None:
        problem = _broker_problem(args.broker)
        if problem is not None:
            print(f"table-controller scenario: {problem}", file=sys.stderr)
            return 2
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    def progress(result: ScenarioResult) -> None:
        print(format_result(result, verbose=args.verbose), flush=True)

    results = asyncio.run(run_scenarios(loaded, broker_url=args.broker, progress=progress))
    passed = sum(1 for r in results if r.passed)
    print(f"{passed} of {len(results)} scenarios passed in {sum(r.seconds for r in results):.1f} s")
    if args.junit is not None:
        args.junit.write_text(junit_xml(results), encoding="utf-8")
    return 0 if passed == len(results) else 1
