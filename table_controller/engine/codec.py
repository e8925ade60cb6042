"""The journal form of an input: a JSON object that round-trips exactly.

``input_from_json(input_to_json(x)) == x`` for every input. The object carries
``type`` (a stable name), ``at`` (RFC 3339 with its offset, microseconds kept)
and the input's own fields; ``values`` of a sensor snapshot is a list of
``[bit, cents]`` pairs or null. A malformed object raises ``JournalDataError``
(a ``ValueError``) naming the problem (a journal that fails here is corrupt: stop and inspect it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from table_controller.engine.errors import JournalDataError
from table_controller.engine.inputs import (
    DEVICE_NAMES,
    SERVICE_ALERT_CODES,
    CardRead,
    ConsolePress,
    CoverRead,
    DeviceOffline,
    DeviceOnline,
    Input,
    Misread,
    PressesRenumbered,
    PublishRefused,
    ReadGap,
    ServiceAlert,
    ShoeStatus,
    SpotsChanged,
    Tick,
)

TYPE_NAMES: Final[dict[type[Any], str]] = {
    CardRead: "card_read",
    Misread: "misread",
    CoverRead: "cover_read",
    ReadGap: "read_gap",
    SpotsChanged: "spots_changed",
    ConsolePress: "console_press",
    PressesRenumbered: "console_restarted",
    DeviceOnline: "device_online",
    DeviceOffline: "device_offline",
    ShoeStatus: "shoe_status",
    PublishRefused: "publish_refused",
    ServiceAlert: "service_alert",
    Tick: "tick",
}


def input_to_json(inp: Input) -> dict[str, Any]:
    """The journal form of ``inp`` (JSON-ready)."""
    out: dict[str, Any] = {"type": TYPE_NAMES[type(inp)], "at": inp.at.isoformat()}
    if isinstance(inp, SpotsChanged):
        out["present"] = inp.present
        out["fault"] = inp.fault
        out["values"] = None if inp.values is None else [[b, c] for b, c in inp.values]
        return out
    for name in type(inp).__slots__:
        if name != "at":
            out[name] = getattr(inp, name)
    return out


def _int(d: Mapping[str, Any], key: str) -> int:
    v = d.get(key)
    if type(v) is not int:
        raise JournalDataError(f"input field {key!r}: expected an integer, got {v!r}")
    return v


def _str(d: Mapping[str, Any], key: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise JournalDataError(f"input field {key!r}: expected a string, got {v!r}")
    return v


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    v = d.get(key)
    if v is not None and type(v) is not int:
        raise JournalDataError(f"input field {key!r}: expected an integer or null, got {v!r}")
    return v


def _opt_str(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    if v is not None and not isinstance(v, str):
        raise JournalDataError(f"input field {key!r}: expected a string or null, got {v!r}")
    return v


def _at(d: Mapping[str, Any]) -> datetime:
    raw = _str(d, "at")
    try:
        at = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise JournalDataError(f"input field 'at': not an RFC 3339 time: {raw!r}") from exc
    if at.tzinfo is None:
        raise JournalDataError(f"input field 'at': time without offset: {raw!r}")
    return at


def _values(d: Mapping[str, Any]) -> tuple[tuple[int, int], ...] | None:
    raw = d.get("values")
    if raw is None:
        return None
    if not isinstance(raw, list | tuple):
        raise JournalDataError(f"input field 'values': expected a list or null, got {raw!r}")
    pairs: list[tuple[int, int]] = []
    for item in raw:
        if (
            not isinstance(item, list | tuple)
            or len(item) != 2
            or type(item[0]) is not int
            or type(item[1]) is not int
        ):
            raise JournalDataError(
                f"input field 'values': expected [bit, cents] pairs, got {item!r}"
            )
        pairs.append((item[0], item[1]))
    return tuple(pairs)


def _one_of(d: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = _str(d, key)
    if value not in allowed:
        raise JournalDataError(f"input field {key!r}: one of {', '.join(allowed)}, got {value!r}")
    return value


def _device(d: Mapping[str, Any]) -> Any:  # a DeviceName, checked
    return _one_of(d, "device", DEVICE_NAMES)


_DECODERS: Final[dict[str, Callable[[Mapping[str, Any], datetime], Input]]] = {
    "card_read": lambda d, at: CardRead(at, _int(d, "n"), _str(d, "card")),
    "misread": lambda d, at: Misread(at, _int(d, "n")),
    "cover_read": lambda d, at: CoverRead(at, _int(d, "n")),
    "read_gap": lambda d, at: ReadGap(
        at, _int(d, "first_missing"), _str(d, "reason"), _opt_int(d, "last_missing")
    ),
    "spots_changed": lambda d, at: SpotsChanged(
        at, _int(d, "present"), _int(d, "fault"), _values(d)
    ),
    "console_press": lambda d, at: ConsolePress(
        at, _int(d, "k"), _str(d, "action"), _opt_str(d, "arg")
    ),
    "console_restarted": lambda d, at: PressesRenumbered(at),
    "device_online": lambda d, at: DeviceOnline(at, _device(d)),
    "device_offline": lambda d, at: DeviceOffline(at, _device(d), _str(d, "detail")),
    "shoe_status": lambda d, at: ShoeStatus(at, _str(d, "state")),
    "publish_refused": lambda d, at: PublishRefused(
        at, _str(d, "topic"), _int(d, "reason_code"), _str(d, "message_id")
    ),
    "service_alert": lambda d, at: ServiceAlert(
        at,
        _str(d, "alert"),
        _one_of(d, "code", SERVICE_ALERT_CODES),
        _str(d, "message"),
        _opt_str(d, "resolved_by"),
    ),
    "tick": lambda d, at: Tick(at),
}


def input_from_json(d: Mapping[str, Any]) -> Input:
    """The input journaled as ``d``; ``JournalDataError`` naming the field if malformed."""
    if not isinstance(d, Mapping):
        raise JournalDataError(f"input: expected an object, got {type(d).__name__}")
    kind = d.get("type")
    decoder = _DECODERS.get(kind) if isinstance(kind, str) else None
    if decoder is None:
        raise JournalDataError(f"input field 'type': unknown input type {kind!r}")
    return decoder(d, _at(d))
