"""Errors of the simulators, sorted by what the caller (a test, a rig) can do.

::

    SimulatorError               root: anything a simulator raises of its own
    ├── LineSettingsError        fix the command line: settings or a port URL no line can take
    ├── FrameFieldError          fix the value: text no field of a frame can carry
    ├── ShoeEmptyError           load a new shoe: every card was drawn
    └── ConsoleRestartedError    press again: the console restarted before answering

The drivers' errors (``drivers.errors``) pass through unchanged.
"""

from __future__ import annotations


class SimulatorError(Exception):
    """Base of every error a simulator raises of its own."""


class LineSettingsError(SimulatorError, ValueError):
    """Line settings or a port URL that can never be opened: fix the command line."""


class FrameFieldError(SimulatorError, ValueError):
    """A value that cannot stand as one field of a line frame (a comma in a press argument
    or a shoe's serial, say): a driver would drop the frame, so it is never sent."""


class ShoeEmptyError(SimulatorError):
    """Every card of the shoe was drawn: ``load()`` a new shoe."""


class ConsoleRestartedError(SimulatorError):
    """The console restarted before the press awaited was answered."""
