"""The devices' links and conditions, and the broker's refusals (docs/rules.md alerts table)."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from table_controller.engine.alerts import raise_alert, resolve
from table_controller.engine.domain import AlertCode, ResolvedBy
from table_controller.engine.inputs import (
    DEVICE_NAMES,
    DeviceOffline,
    DeviceOnline,
    PublishRefused,
    ShoeStatus,
)
from table_controller.engine.table import Table

# docs/feed.md: at most one BROKER_REFUSED per topic per minute of input time, as
# the alert about a refusal may itself be refused.
BROKER_REFUSED_INTERVAL: Final = timedelta(seconds=60)
# docs/devices.md: the shoe's heartbeat states that mean it cannot deal safely.
SHOE_FAULTS: Final = frozenset({"DOOR_OPEN", "JAM", "FAULT"})
SHOE_OK: Final = "OK"


def on_online(t: Table, inp: DeviceOnline) -> None:
    if inp.device not in DEVICE_NAMES:
        return
    dev = t.devices[inp.device]
    if dev.online:
        return
    t.devices[inp.device] = dev._replace(online=True, seen=True, detail=None)
    offline = [
        a for a in t.open_alerts if a.code is AlertCode.DEVICE_OFFLINE and a.device == inp.device
    ]
    back = dev.seen or bool(offline)
    if inp.device == "sensors" and not t.round.latched:
        # Between rounds the board back may be another board (a presence-only one in
        # place of an RFID one): whether it reports values is learned again from its
        # snapshots. A round in action keeps what it latched (``Round.valued``).
        t.sensors_valued = False
    if back and inp.device == "sensors":
        # docs/rules.md: a sensor board back counts as back only once its first snapshot
        # came (and, while wagers are in action, was compared with them): until then
        # the layout is the one from before it went, which it can no longer vouch for.
        t.sensors_check_due = True
        return
    if back:
        raise_alert(t, AlertCode.DEVICE_ONLINE, f"{inp.device} is back", device=inp.device)
    # A device alert resolves itself when the device is back (docs/rules.md).
    resolve(t, offline, ResolvedBy.DEVICE_ONLINE)


def on_offline(t: Table, inp: DeviceOffline) -> None:
    if inp.device not in DEVICE_NAMES:
        return
    dev = t.devices[inp.device]
    t.devices[inp.device] = dev._replace(online=False, detail=inp.detail)
    if inp.device == "sensors":
        t.sensors_check_due = False
    if any(a.code is AlertCode.DEVICE_OFFLINE and a.device == inp.device for a in t.open_alerts):
        return
    if not dev.online and dev.detail is not None:
        # Already known to be offline and said so: say it once.
        return
    raise_alert(
        t, AlertCode.DEVICE_OFFLINE, f"{inp.device} is offline: {inp.detail}", device=inp.device
    )


def on_shoe_status(t: Table, inp: ShoeStatus) -> None:
    dev = t.devices["shoe"]
    state = inp.state.upper()
    if dev.status == state:
        return
    t.devices["shoe"] = dev._replace(status=state)
    shoe_fault(t)


def shoe_fault(t: Table) -> None:
    """SHOE_FAULT when the shoe's last reported state is a fault and wagers are latched.

    docs/rules.md: a shoe that reports a fault while wagers are latched holds the round;
    CONFIRM resolves it once the shoe reports OK again. Checked when the state changes
    and at the latch, so a fault that began in betting (or outlived a void) holds the
    round before it is dealt; raised once while one is open.
    """
    state = t.devices["shoe"].status
    if state not in SHOE_FAULTS or not t.round.latched:
        return
    if any(a.code is AlertCode.SHOE_FAULT for a in t.open_alerts):
        return
    raise_alert(t, AlertCode.SHOE_FAULT, f"the shoe reports {state}: check it before dealing on")


def on_refused(t: Table, inp: PublishRefused) -> None:
    before = t.refused.get(inp.topic)
    if before is not None and inp.at - before < BROKER_REFUSED_INTERVAL:
        return
    t.refused[inp.topic] = inp.at
    raise_alert(
        t,
        AlertCode.BROKER_REFUSED,
        f"the broker refused a publish to {inp.topic} (reason 0x{inp.reason_code:02X}, "
        f"message {inp.message_id}); it stays in the outbox",
    )
