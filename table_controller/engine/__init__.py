"""The round engine: a pure function from (table state, input) to (table state, outputs).

``transition(state, inp)`` is the whole game (GAME.md, 9 NYCRR §5324.22): no
I/O, no clock, no exceptions. The service journals each input
(``input_to_json``), feeds it here, and carries out the outputs: events,
console answers and lines, lights, round records. ``replay`` rebuilds a table
from its journal; the views are what the publisher sends; ``simulate`` plays
seeded shoes through the engine for the odds tool and the benchmark.

Modules: ``inputs`` / ``outputs`` (the records in and out), ``state`` (the
table as one immutable value), ``transition`` (the rules), ``settlement``
(arithmetic and the round record), ``views``, ``codec``, ``engine``
(``RoundEngine``, ``replay``), ``simulate``, ``cards``.
"""

from table_controller.engine.cards import CARD_INDEX, CARD_RANK, DECK, RANKS, SUITS
from table_controller.engine.codec import input_from_json, input_to_json
from table_controller.engine.engine import RoundEngine, replay
from table_controller.engine.inputs import (
    CardRead,
    ConsolePress,
    ConsoleRestarted,
    CoverRead,
    DeviceName,
    DeviceOffline,
    DeviceOnline,
    Input,
    Misread,
    PublishRefused,
    ReadGap,
    ShoeStatus,
    SpotsChanged,
    Tick,
)
from table_controller.engine.outputs import (
    ConsoleReply,
    ConsoleShow,
    Event,
    EventType,
    NakReason,
    Output,
    RoundRecorded,
    SetLights,
)
from table_controller.engine.settlement import build_record, npu_json, wager_net
from table_controller.engine.simulate import SimulationResult, simulate
from table_controller.engine.state import (
    AlertCode,
    Decision,
    Outcome,
    Phase,
    ResolvedBy,
    Role,
    Severity,
    SpotKind,
    TableSetup,
    TableState,
    initial_state,
    spot_bit,
)
from table_controller.engine.transition import transition
from table_controller.engine.views import device_states, state_view, stats_view

__all__ = [
    "CARD_INDEX",
    "CARD_RANK",
    "DECK",
    "RANKS",
    "SUITS",
    "AlertCode",
    "CardRead",
    "ConsolePress",
    "ConsoleReply",
    "ConsoleRestarted",
    "ConsoleShow",
    "CoverRead",
    "Decision",
    "DeviceName",
    "DeviceOffline",
    "DeviceOnline",
    "Event",
    "EventType",
    "Input",
    "Misread",
    "NakReason",
    "Outcome",
    "Output",
    "Phase",
    "PublishRefused",
    "ReadGap",
    "ResolvedBy",
    "Role",
    "RoundEngine",
    "RoundRecorded",
    "SetLights",
    "Severity",
    "ShoeStatus",
    "SimulationResult",
    "SpotKind",
    "SpotsChanged",
    "TableSetup",
    "TableState",
    "Tick",
    "build_record",
    "device_states",
    "initial_state",
    "input_from_json",
    "input_to_json",
    "npu_json",
    "replay",
    "simulate",
    "spot_bit",
    "state_view",
    "stats_view",
    "transition",
    "wager_net",
]
