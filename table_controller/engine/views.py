"""Read-only views of the table for the publisher (JSON-ready dicts, no envelope).

``state_view`` is the ``table-state/1`` body, ``stats_view`` the
``table-stats/1`` body, ``device_states`` the ``devices`` of ``table-status/1``,
each drawn from an ``EngineSnapshot``. Burn cards appear as a count only,
never with a rank (§(h)(1)).
"""

from __future__ import annotations

from typing import Any, Final

from table_controller.engine.domain import (
    BURN_ROLES,
    SPOT_INITIAL,
    SPOT_TIE,
    SPOT_WAR,
    SPOTS_PER_POSITION,
    CardSlot,
    Role,
    Spots,
    Wager,
    spot_bit,
)
from table_controller.engine.inputs import DEVICE_NAMES
from table_controller.engine.snapshot import EngineSnapshot

_LIVE_SPOTS: Final = (("initial", SPOT_INITIAL), ("tie", SPOT_TIE), ("war", SPOT_WAR))


def card_json(slot: CardSlot) -> dict[str, Any]:
    return {
        "n": slot.n,
        "card": slot.card,
        "role": slot.role.value,
        "position": slot.position,
        "source": slot.source.value,
    }


def _wagers(spots: Spots, position: int, war_tie: Wager | None) -> dict[str, Any]:
    """A position's four spots as ``{"present", "amount"}`` (the amount in cents when the
    board values its chips)."""
    out: dict[str, Any] = {}
    for name, spot in _LIVE_SPOTS:
        bit = spot_bit(position, spot)
        out[name] = {"present": bool(spots.present >> bit & 1), "amount": spots.value(bit)}
    out["war_tie"] = {
        "present": war_tie is not None,
        "amount": None if war_tie is None else war_tie.amount,
    }
    return out


def state_view(snap: EngineSnapshot) -> dict[str, Any]:
    """The ``table-state/1`` body: phase, round, shoe, live wagers and cards on the layout."""
    rnd = snap.round
    # One pass over the round's cards and hands, not one per position.
    dealt: dict[int | None, list[dict[str, Any]]] = {}
    burns = 0
    for c in rnd.cards:
        if c.role in BURN_ROLES:
            burns += 1
        else:
            dealt.setdefault(c.position, []).append(card_json(c))
    war_ties = {h.position: h.war_tie for h in rnd.hands}
    positions = [
        {
            "position": p,
            "wagers": _wagers(snap.spots, p, war_ties.get(p)),
            "cards": dealt.get(p, []),
        }
        for p in range(1, snap.positions + 1)
    ]
    shoe = snap.shoe
    return {
        "phase": snap.phase.value,
        "round_id": snap.round_id,
        "held": snap.held,
        "dealer": snap.dealer,
        "shoe": {
            "id": shoe.id,
            "cards_read": shoe.cards_read,
            "cover_seen": shoe.cover_seen,
            "burn_due": shoe.burns_due > 0,
        },
        "positions": positions,
        "burns": burns,
        "dealer_card": rnd.card_of(Role.DEALER),
        "dealer_war_card": rnd.card_of(Role.WAR_DEALER),
        "open_alerts": [
            {"alert": a.alert, "code": a.code.value, "severity": a.severity.value}
            for a in snap.alerts.open
        ],
    }


def stats_view(snap: EngineSnapshot) -> dict[str, Any]:
    """The ``table-stats/1`` body. ``drop``/``win`` in cents, None when amounts are unknown."""
    st = snap.stats
    rounds_per_hour: float | None = None
    if st.first_started is not None and st.last_ended is not None:
        seconds = (st.last_ended - st.first_started).total_seconds()
        if seconds > 0:
            rounds_per_hour = round(st.rounds * 3600.0 / seconds, 2)
    return {
        "rounds": st.rounds,
        "rounds_per_hour": rounds_per_hour,
        "ties": st.ties,
        "wars": st.wars,
        "surrenders": st.surrenders,
        "voids": st.voids,
        "alerts_by_code": dict(st.alerts_by_code),
        "drop": st.drop,
        "win": st.win,
    }


_SPOT_NAMES: Final = ("initial", "tie", "war")  # the board's three spots per position


def _faulty_spots(mask: int) -> str:
    names = [
        f"P{bit // SPOTS_PER_POSITION + 1} {_SPOT_NAMES[bit % SPOTS_PER_POSITION]}"
        for bit in range(mask.bit_length())
        if mask >> bit & 1
    ]
    return "faulty spot sensors: " + ", ".join(names)


def device_states(snap: EngineSnapshot) -> dict[str, dict[str, Any]]:
    """Each device as ``{"state": "ok" | "offline" | "fault", "detail": str | None}``."""
    out: dict[str, dict[str, Any]] = {}
    for name, dev in zip(DEVICE_NAMES, snap.devices, strict=True):
        if not dev.online:
            out[name] = {"state": "offline", "detail": dev.detail}
        elif name == "shoe" and dev.status != "OK":
            # docs/devices.md: DOOR_OPEN / JAM / FAULT from the shoe's heartbeat.
            out[name] = {"state": "fault", "detail": dev.status}
        elif name == "sensors" and snap.spots.fault:
            # A spot's sensor the board flags faulty: the board works, that sensor not.
            out[name] = {"state": "fault", "detail": _faulty_spots(snap.spots.fault)}
        else:
            out[name] = {"state": "ok", "detail": None}
    return out
