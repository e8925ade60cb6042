"""The dealer console: ``frames`` (bytes ↔ frames) → ``protocol`` (restarts, heartbeat;
pure) → ``client`` (``ConsoleClient``: async, reconnecting)."""

from drivers.console.client import ConsoleClient
from drivers.console.frames import ConsoleAction, NakReason
from drivers.console.protocol import (
    ButtonPressed,
    ConsoleEvent,
    ConsoleOffline,
    ConsoleOnline,
    ConsoleRestarted,
)

__all__ = [
    "ButtonPressed",
    "ConsoleAction",
    "ConsoleClient",
    "ConsoleEvent",
    "ConsoleOffline",
    "ConsoleOnline",
    "ConsoleRestarted",
    "NakReason",
]
