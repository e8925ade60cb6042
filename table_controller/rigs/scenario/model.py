"""One scenario file as a model: the table, its shoe, the broker it needs, its steps."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, model_validator

from table_controller.engine.rules import RulesName, profile
from table_controller.rigs.scenario.fields import COVER, Cents, Seconds, ShoeList, Strict
from table_controller.rigs.scenario.steps import (
    AnyStep,
    BrokerStep,
    DrawStep,
    DropStep,
    FlipStep,
    KillStep,
    LoseStep,
    MisreadStep,
    cards_of,
)
from table_controller.service.config import ConfigError, parse_config

DEFAULT_TIMEOUT_S: Final = 5.0
"""How long an expectation, or an action's effect, is waited for unless the file says."""
SITE: Final = "scenarios"
TopicName = Literal["status", "state", "events", "rounds", "alerts", "stats"]


class TableBlock(Strict):
    """The table under test (docs/devices.md, table configuration)."""

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
    def war_tie_allowed(self) -> bool:
        """The profile takes chips on a tied position's tie spot as a war-tie wager."""
        allowed = profile(self.rules).war_tie_wager_allowed
        return bool(self.profile.get("war_tie_wager_allowed", allowed))

    @property
    def deck_count(self) -> int:
        return self.decks if self.decks is not None else profile(self.rules).decks_default


class BrokerBlock(Strict):
    """The broker a scenario needs when the shared one will not do."""

    own: bool = False
    """A broker of its own, not the shared one (implied by ``deny``)."""
    deny: list[TopicName] = Field(default_factory=list)
    """The table's topics the broker refuses (PUBACK 0x87 to an MQTT 5 client, docs/feed.md)."""


class Scenario(Strict):
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
            if not isinstance(step, DrawStep | MisreadStep | DropStep | FlipStep | LoseStep):
                continue
            cards = cards_of(step)
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

    @property
    def kills_controller(self) -> bool:
        """The controller is killed at some step (``kill: controller``)."""
        return any(isinstance(s, KillStep) for s in self.steps)
