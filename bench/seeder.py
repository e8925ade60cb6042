"""Round records and events seeded into a recorder's database through its own intake.

Each record is a ``war-round/1`` that validates, settled by the profile's own
data (``engine.rules``), stored by ``store_batch`` as if it had arrived.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from table_controller.engine.rules import PROFILES, RulesName
from table_controller.feed.chain import seal
from table_controller.feed.payloads import rfc3339
from table_controller.recorder.intake import FeedMessage, parse_message
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import store_batch

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
ROUND_S = 40


@dataclass(frozen=True, slots=True)
class Seat:
    """One position's play in a round: its wagers in cents and how it went."""

    initial: int
    outcome: str = "lose"  # win, lose or tie
    decision: str | None = None  # after a tie: war or surrender
    war_outcome: str | None = None
    tie: int = 0
    war_tie: int = 0


def _wager(spot: str, amount: int, odds: str, result: str, per_unit: Fraction) -> dict[str, Any]:
    npu: int | float = int(per_unit) if per_unit.denominator == 1 else float(per_unit)
    return {
        "spot": spot,
        "amount": amount,
        "odds": odds,
        "result": result,
        "net_per_unit": npu,
        "net": int(amount * per_unit),
    }


def _position(number: int, seat: Seat, rules: RulesName) -> dict[str, Any]:
    profile = PROFILES[rules]
    tie_odds = f"{profile.tie_odds}:1"
    wagers = []
    if seat.outcome == "win":
        wagers.append(_wager("initial", seat.initial, "1:1", "win", Fraction(1)))
    elif seat.outcome == "lose":
        wagers.append(_wager("initial", seat.initial, "1:1", "lose", Fraction(-1)))
    elif seat.decision == "surrender":
        loss = -profile.surrender_loss
        wagers.append(_wager("initial", seat.initial, "1:1", "surrender", loss))
    else:
        assert seat.war_outcome is not None
        s = getattr(profile.war, seat.war_outcome)
        wagers.append(
            _wager(
                "initial", seat.initial, s.initial.odds, s.initial.result, s.initial.net_per_unit
            )
        )
        wagers.append(_wager("war", seat.initial, s.war.odds, s.war.result, s.war.net_per_unit))
    if seat.tie:
        won = seat.outcome == "tie"
        per_unit = Fraction(profile.tie_odds) if won else Fraction(-1)
        wagers.append(_wager("tie", seat.tie, tie_odds, "win" if won else "lose", per_unit))
    if seat.war_tie:
        won = seat.war_outcome == "tie"
        per_unit = Fraction(profile.tie_odds) if won else Fraction(-1)
        wagers.append(_wager("war_tie", seat.war_tie, tie_odds, "win" if won else "lose", per_unit))
    card = {"win": "KH", "lose": "4H", "tie": "9H"}[seat.outcome]
    war = seat.decision == "war"
    return {
        "position": number,
        "card": card,
        "outcome": seat.outcome,
        "decision": seat.decision,
        "war_card": (
            "9D" if seat.war_outcome == "tie" else "AD" if seat.war_outcome == "win" else "2D"
        )
        if war
        else None,
        "war_outcome": seat.war_outcome if war else None,
        "wagers": wagers,
        "net": sum(w["net"] for w in wagers),
    }


class Seeder:
    """A table's feed, built round by round and stored in ``db``."""

    def __init__(
        self,
        db: Backend,
        *,
        site: str = "main-floor",
        table: str = "war-01",
        rules: RulesName = RulesName.NY,
        decks: int = 6,
        epoch: str | None = None,
        start: datetime = T0,
        sealed: bool = False,
    ) -> None:
        self.db, self.site, self.table, self.rules, self.decks = db, site, table, rules, decks
        self.epoch = epoch or str(uuid.uuid4())
        self.at = start
        self.round_id = 0
        self.feed_seq = 0
        self.event_seq = 0
        self.records: list[dict[str, Any]] = []
        self.sealed = sealed  # records carry prev_hash and hash (docs/feed.md)
        self.prev_hash: str | None = None

    def _envelope(self, schema: str, at: datetime) -> dict[str, Any]:
        self.feed_seq += 1
        return {
            "schema": schema,
            "id": str(uuid.uuid4()),
            "table": self.table,
            "site": self.site,
            "ts": rfc3339(at),
            "epoch": self.epoch,
            "feed_seq": self.feed_seq,
        }

    def _message(self, leaf: str, body: dict[str, Any]) -> FeedMessage:
        topic = f"casino/{self.site}/table/{self.table}/{leaf}"
        msg = parse_message(topic, json.dumps(body).encode())
        assert msg.problem is None, msg.problem
        return msg

    def record(self, seats: dict[int, Seat], *, void: bool = False) -> dict[str, Any]:
        """The next round's record (not stored)."""
        self.round_id += 1
        started, ended = self.at, self.at + timedelta(seconds=ROUND_S)
        self.at = ended
        positions = [_position(n, s, self.rules) for n, s in sorted(seats.items())]
        record = self._envelope("war-round/1", ended) | {
            "round_id": self.round_id,
            "shoe_id": "S-1",
            "dealer": "D-1",
            "rules": self.rules.value,
            "rules_overrides": {},
            "currency": "USD",
            "started": rfc3339(started),
            "ended": rfc3339(ended),
            "void": void,
            "void_reason": "misdeal" if void else None,
            "cards": [{"n": 1, "card": "9C", "role": "burn", "position": None, "source": "shoe"}],
            "dealer_card": "9S",
            "dealer_war_card": "9C" if any(s.decision == "war" for s in seats.values()) else None,
            "positions": [] if void else positions,
            "net": 0 if void else sum(p["net"] for p in positions),
            "alerts": [],
        }
        if self.sealed:
            sealed = seal(record, self.prev_hash)
            self.prev_hash = sealed["hash"]
            return sealed
        return record

    async def store(self, *records: dict[str, Any]) -> None:
        await store_batch(
            self.db, [self._message("rounds", r) for r in records], received=rfc3339(self.at)
        )
        self.records += records

    async def round(self, seats: dict[int, Seat], *, void: bool = False) -> dict[str, Any]:
        record = self.record(seats, void=void)
        await self.store(record)
        return record

    async def dealer_changed(self, dealer: str) -> None:
        self.event_seq += 1
        body = self._envelope("table-event/1", self.at) | {
            "seq": self.event_seq,
            "round_id": None,
            "type": "dealer_changed",
            "dealer": dealer,
        }
        await store_batch(self.db, [self._message("events", body)], received=rfc3339(self.at))

    async def status(self) -> None:
        body = {
            "schema": "table-status/1",
            "id": str(uuid.uuid4()),
            "table": self.table,
            "site": self.site,
            "ts": rfc3339(self.at),
            "online": True,
            "version": "test",
            "rules": self.rules.value,
            "decks": self.decks,
            "positions": 7,
            "devices": {},
            "outbox": {},
        }
        await store_batch(
            self.db,
            [
                parse_message(
                    f"casino/{self.site}/table/{self.table}/status", json.dumps(body).encode()
                )
            ],
            received=rfc3339(self.at),
        )
