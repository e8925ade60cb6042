"""What a scenario's expectations see: the controller's messages as the rig's observer
took them, and the checks of ``expect_*`` steps against them.

Every wait is bounded; a check returns its verdict with what was seen instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from table_controller.rigs.observer import Observer
from table_controller.rigs.scenario.compare import (
    alert_line,
    alert_matches,
    diff_round,
    equal,
    event_line,
    same,
    show,
)
from table_controller.rigs.scenario.expect import AlertExpect, RoundExpect, StateExpect
from table_controller.rigs.scenario.results import Status
from table_controller.rigs.scenario.steps import BetSpec
from table_controller.rigs.spots import SPOT_NUMBERS

T = TypeVar("T")
E = TypeVar("E", StateExpect, RoundExpect)
Verdict = tuple[Status, str]


class Evidence:
    """The messages of one table seen during one scenario, and the expectations on them."""

    def __init__(self, observer: Observer) -> None:
        self.obs = observer
        self.used_alerts: set[tuple[str, str | None]] = set()
        self.used_events: set[str] = set()
        self.used_rounds: set[int] = set()
        # Read numbers start again after a shoe power cycle: older evidence is ignored.
        self.events_floor = 0
        self.alerts_floor = 0
        self.round_base = 0
        """Round ids in a file count from the scenario's first round: this is added."""
        self.dealer_before: str | None = None
        """The dealer signed in when the scenario began: what ``dealer: null`` stands for
        on a table that has had a dealer before (a table under test)."""
        self.earlier_alerts: frozenset[str] = frozenset()
        """Alerts raised before the scenario began: not the scenario's to expect."""

    async def until(self, check: Callable[[], T | None], timeout: float) -> T | None:
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

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert message seen, from ``alerts`` and (when that topic is denied) the
        alert events; one per (alert, resolved_by)."""
        seen: dict[tuple[str, str | None], dict[str, Any]] = {}
        for msg in self.obs.of("alerts"):
            seen.setdefault((msg["alert"], msg.get("resolved_by")), msg)
        for ev in self.obs.of("events"):
            if ev.get("type") == "alert":
                seen.setdefault((ev["alert"], ev.get("resolved_by")), ev)
        return list(seen.values())

    def devices(self) -> dict[str, str]:
        status = self.obs.last("status")
        if status is None:
            return {}
        return {name: d["state"] for name, d in status["devices"].items()}

    def state_brief(self) -> dict[str, Any]:
        state = self.obs.last("state")
        if state is None:
            return {}
        return {
            "phase": state["phase"],
            "held": state["held"],
            "round_id": state["round_id"],
            "cards_read": state["shoe"]["cards_read"],
        }

    def shown(self) -> dict[int, dict[str, int | None]]:
        """The live wagers of the latest ``state``, by position and spot."""
        state = self.obs.last("state")
        if state is None:
            return {}
        out: dict[int, dict[str, int | None]] = {}
        for p in state["positions"]:
            wagers = {k: v for k, v in p["wagers"].items() if k in SPOT_NUMBERS}
            if wagers:
                out[p["position"]] = wagers
        return out

    def deciding(self, position: int) -> bool:
        """The latest ``state`` shows ``position`` deciding a tie (§(i)(3)): its card's
        rank is the dealer's, in ``tie_decision``."""
        state = self.obs.last("state")
        if state is None or state["phase"] != "tie_decision" or not state["dealer_cards"]:
            return False
        dealer = state["dealer_cards"][0]
        for p in state["positions"]:
            if p["position"] == position and p["cards"]:
                # Cards as the devices write them: the rank is the first character.
                return bool(p["cards"][0][0] == dealer[0])
        return False

    def tie_spot_problem(self, spec: BetSpec, war_tie_allowed: bool) -> str | None:
        """Why the chips ``spec`` puts on the tie spot mean something else now, or None.

        Where the profile has no war-tie wager, chips there at a decision are in no
        action, and ``tie`` may say so.
        """
        deciding = self.deciding(spec.position)
        if spec.tie is not None and deciding and war_tie_allowed:
            return (
                f"P{spec.position} is deciding a tie: chips on its tie spot now are a tie "
                f"wager on the war deal (§(i)(5)); write war_tie: {spec.tie}, or leave tie out"
            )
        if spec.war_tie is not None and not war_tie_allowed:
            return "war_tie: these rules have no tie wager on the war deal (§(i)(5)): write tie"
        if spec.war_tie is not None and not deciding:
            return (
                f"war_tie is the tie spot of a position deciding a tie; P{spec.position} is "
                f"not (phase {show(self.state_brief().get('phase'))}): write tie"
            )
        return None

    def taken(self, n: int, cover: bool) -> dict[str, Any] | None:
        """The message showing that the controller has taken read ``n``: its card event,
        an alert about it, or (the cover card) the state with the shoe marked for
        reshuffle."""
        if cover:
            state = self.obs.last("state")
            if state is not None and (
                state["shoe"]["cover_seen"] or state["phase"] == "shuffle_due"
            ):
                return state
            return None
        events = self.obs.of("events")[self.events_floor :]
        for e in events:
            if e.get("type") == "card" and e.get("n") == n:
                return e
        prefix = f"read {n}:"
        alerts = self.obs.of("alerts")[self.alerts_floor :]
        return next((a for a in alerts if str(a.get("message", "")).startswith(prefix)), None)

    def shoe_restarted(self) -> None:
        """The shoe's read numbers start again: only what comes from now on is evidence."""
        self.events_floor = len(self.obs.of("events"))
        self.alerts_floor = len(self.obs.of("alerts"))

    # -- expectations ----------------------------------------------------------------

    def _relative(self, expect: E) -> E:
        """The expectation on this table: round ids after its earlier rounds, and no
        dealer meaning the dealer it already had."""
        update: dict[str, Any] = {}
        if expect.round_id is not None and self.round_base:
            update["round_id"] = expect.round_id + self.round_base
        if "dealer" in expect.model_fields_set and expect.dealer is None:
            update["dealer"] = self.dealer_before
        return expect.model_copy(update=update) if update else expect

    async def expect_state(self, expect: StateExpect, timeout: float) -> Verdict:
        expect = self._relative(expect)

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
                same(key, want, seen[key], out)
            return out

        if await self.until(lambda: None if diffs() else True, timeout):
            return Status.PASS, ""
        return Status.FAIL, f"after {timeout:g} s: " + "; ".join(diffs())

    async def expect_alert(self, expect: AlertExpect, timeout: float) -> Verdict:
        def find() -> tuple[str, str | None] | None:
            for alert in self.alerts():
                key = (alert["alert"], alert.get("resolved_by"))
                if key not in self.used_alerts and alert_matches(expect, alert):
                    return key
            return None

        key = await self.until(find, timeout)
        if key is not None:
            self.used_alerts.add(key)
            return Status.PASS, ""
        others = [
            alert_line(a)
            for a in self.alerts()
            if (a["alert"], a.get("resolved_by")) not in self.used_alerts
        ]
        seen = "; ".join(others) if others else "no other alerts"
        return Status.FAIL, f"not seen within {timeout:g} s; saw {seen}"

    def expect_no_alert(self, expect: AlertExpect) -> Verdict:
        found = [alert_line(a) for a in self.alerts() if alert_matches(expect, a)]
        if found:
            return Status.FAIL, "saw " + "; ".join(found)
        return Status.PASS, ""

    async def expect_event(self, expect: dict[str, Any], timeout: float) -> Verdict:
        def find() -> str | None:
            for event in self.obs.of("events"):
                if event["id"] in self.used_events:
                    continue
                if all(k in event and equal(v, event[k]) for k, v in expect.items()):
                    return str(event["id"])
            return None

        found = await self.until(find, timeout)
        if found is not None:
            self.used_events.add(found)
            return Status.PASS, ""
        same_type = [
            event_line(e)
            for e in self.obs.of("events")
            if e.get("type") == expect["type"] and e["id"] not in self.used_events
        ]
        if same_type:
            seen = "; ".join(same_type[-6:])
        else:
            seen = f"no other {expect['type']} event; last events: " + "; ".join(
                event_line(e) for e in self.obs.of("events")[-6:]
            )
        return Status.FAIL, f"not seen within {timeout:g} s; saw {seen}"

    async def expect_round(self, expect: RoundExpect, timeout: float) -> Verdict:
        expect = self._relative(expect)

        def pick() -> int | None:
            for i, record in enumerate(self.obs.of("rounds")):
                if i in self.used_rounds:
                    continue
                if expect.round_id is None or record.get("round_id") == expect.round_id:
                    return i
            return None

        index = await self.until(pick, timeout)
        if index is None:
            ids = [r.get("round_id") for r in self.obs.of("rounds")]
            which = "" if expect.round_id is None else f" for round {expect.round_id}"
            return Status.FAIL, (
                f"no round record{which} within {timeout:g} s (records seen: rounds "
                f"{show(ids)}, all checked); last state: {show(self.state_brief())}"
            )
        self.used_rounds.add(index)
        record = self.obs.of("rounds")[index]
        if self.earlier_alerts:
            kept = [a for a in record.get("alerts", []) if a not in self.earlier_alerts]
            record = {**record, "alerts": kept}
        codes = {a["alert"]: a["code"] for a in self.alerts()}
        diffs = diff_round(expect, record, codes)
        if diffs:
            return Status.FAIL, f"round {record.get('round_id')}: " + "; ".join(diffs)
        return Status.PASS, ""


def caused_by(message: dict[str, Any]) -> str:
    """What kind of message a read caused: ``card`` (event), ``alert`` or ``state``."""
    if message.get("type") == "card":
        return "card"
    return "alert" if "code" in message else "state"
