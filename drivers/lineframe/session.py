"""The contract between a device's link protocol (pure) and the link that runs it (I/O).

A protocol is a sans-I/O state machine: it is told that a connection opened,
that a frame arrived or that time passed, always with the current time as an
argument, and answers with a :class:`Step`: events for the client, frames to
send, whether the device has shown it is there, or that the link is to be
dropped. It never reads a clock, sleeps or touches a port, so every timing rule
(heartbeat watchdog, resend deadline) is tested without waiting.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from drivers.lineframe.codec import LineFrame

F = TypeVar("F", bound=LineFrame)
"""Frames the device sends."""
C = TypeVar("C", bound=LineFrame)
"""Frames the controller sends."""
E = TypeVar("E")
"""Events for the client's consumer."""

HEARTBEAT_TIMEOUT_S = 3.0
"""docs/devices.md and docs/rules.md: no heartbeat for 3 s and the device is offline."""


@dataclass(frozen=True, slots=True)
class Step(Generic[C, E]):
    """What a protocol wants done after one input."""

    events: Sequence[E] = ()
    send: Sequence[C] = ()
    online: E | None = None
    """The device proved it is there in this session; the link reports this event if it
    had not already (a device's return is reported once)."""
    lost: str | None = None
    """Drop this session for this reason (a silent device); the link reconnects."""


class LinkProtocol(ABC, Generic[F, C, E]):
    """One device's link rules; the state kept across sessions is the protocol's own."""

    @abstractmethod
    def connection_made(self, now: float) -> Step[C, E]:
        """A new session opened: forget per-session state, say what to send first."""

    @abstractmethod
    def frame_received(self, frame: F, now: float) -> Step[C, E]:
        """A checked frame arrived from the device."""

    @abstractmethod
    def timer(self, now: float) -> Step[C, E]:
        """The time of :meth:`deadline` has come (or passed)."""

    @abstractmethod
    def deadline(self) -> float | None:
        """When :meth:`timer` must next be called, None while nothing is timed."""
