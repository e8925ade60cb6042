"""The round engine: the rules of one table, applied to its inputs one at a time.

May import: nothing of ours and nothing that does I/O (no serial, usb, asyncio,
sqlite3, socket, MQTT, pydantic); ``tests/test_layering.py`` checks it.

``RoundEngine(setup).feed(input) -> outputs`` is the whole game (docs/rules.md,
9 NYCRR §5324.22): no I/O, no clock, no exceptions on any input. The service
journals each input (``input_to_json``), feeds it here, and carries out the
outputs: events, console answers and lines, lights, round records.

Snapshots and checkpoints: ``RoundEngine.snapshot() -> EngineSnapshot`` is
the table as one immutable value (everything it knows: shoe, dealer, round,
alerts, devices, console answers, figures). ``EngineSnapshot.to_json()`` is
its JSON-ready form, versioned (``SNAPSHOT_VERSION``), and
``EngineSnapshot.from_json(data)`` reads it back (``SnapshotError`` naming
the field otherwise). ``RoundEngine.from_snapshot(setup, snapshot)`` carries
on exactly where the snapshot was taken: feeding it the inputs journaled after
the snapshot gives the same table and outputs as replaying the whole journal
(``replay(setup, inputs, start=snapshot)``). The views draw from snapshots.

Modules, along the rules' seams: ``domain`` (words and small values),
``rules`` (profiles and limits), ``bounds`` (what a profile's overrides may
change), ``inputs`` / ``outputs`` / ``records``,
``table`` (the mutable working state), ``betting`` (latch and wager guards),
``dealing`` (reads, burns, the original deal), ``war`` (tie decision, war
deal), ``alerts`` and ``devices`` (holds, device links), ``console`` (the
dealer's presses), ``rounds`` (round end), ``settlement``, ``engine``,
``snapshot`` / ``jsonform``, ``views``, ``codec``, ``simulate`` (the one
session loop), ``errors``, and ``native`` (the rule modules compiled, when they are).
"""

# First: the compiled rule modules go on the path when they match the sources (native.py).
from table_controller.engine import native
from table_controller.engine.cards import CARD_INDEX, CARD_RANK, DECK, RANKS, SUITS
from table_controller.engine.codec import input_from_json, input_to_json
from table_controller.engine.domain import (
    Alert,
    AlertCode,
    CardSlot,
    Decision,
    DeviceState,
    LatchedBy,
    Outcome,
    Phase,
    ResolvedBy,
    Role,
    Severity,
    Source,
    SpotKind,
    Spots,
    Stats,
    TableSetup,
    Wager,
    spot_bit,
)
from table_controller.engine.engine import RoundEngine, replay
from table_controller.engine.errors import EngineError, JournalDataError, RulesError, SnapshotError
from table_controller.engine.inputs import (
    DEVICE_NAMES,
    CardRead,
    ConsoleAction,
    ConsolePress,
    CoverRead,
    DeviceName,
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
from table_controller.engine.outputs import (
    ConsoleReply,
    ConsoleShow,
    Event,
    EventType,
    Output,
    Refusal,
    RoundRecorded,
    SetLights,
)
from table_controller.engine.records import PositionRecord, RoundRecord, WagerRecord, WagerResult
from table_controller.engine.settlement import npu_json, wager_net
from table_controller.engine.simulate import Session, SimulationResult, simulate
from table_controller.engine.snapshot import (
    SNAPSHOT_VERSION,
    EngineSnapshot,
    HandSnapshot,
    RoundSnapshot,
)
from table_controller.engine.views import card_json, device_states, state_view, stats_view

__all__ = [
    "CARD_INDEX",
    "CARD_RANK",
    "DECK",
    "DEVICE_NAMES",
    "RANKS",
    "SNAPSHOT_VERSION",
    "SUITS",
    "Alert",
    "AlertCode",
    "CardRead",
    "CardSlot",
    "ConsoleAction",
    "ConsolePress",
    "ConsoleReply",
    "ConsoleShow",
    "CoverRead",
    "Decision",
    "DeviceName",
    "DeviceOffline",
    "DeviceOnline",
    "DeviceState",
    "EngineError",
    "EngineSnapshot",
    "Event",
    "EventType",
    "HandSnapshot",
    "Input",
    "JournalDataError",
    "LatchedBy",
    "Misread",
    "Outcome",
    "Output",
    "Phase",
    "PositionRecord",
    "PressesRenumbered",
    "PublishRefused",
    "ReadGap",
    "Refusal",
    "ResolvedBy",
    "Role",
    "RoundEngine",
    "RoundRecord",
    "RoundRecorded",
    "RoundSnapshot",
    "RulesError",
    "ServiceAlert",
    "Session",
    "SetLights",
    "Severity",
    "ShoeStatus",
    "SimulationResult",
    "SnapshotError",
    "Source",
    "SpotKind",
    "Spots",
    "SpotsChanged",
    "Stats",
    "TableSetup",
    "Tick",
    "Wager",
    "WagerRecord",
    "WagerResult",
    "card_json",
    "device_states",
    "input_from_json",
    "input_to_json",
    "native",
    "npu_json",
    "replay",
    "simulate",
    "spot_bit",
    "state_view",
    "stats_view",
    "wager_net",
]
