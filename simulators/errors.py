"""Errors of the simulators, sorted by what the caller (a test, a rig) can do.

::

    SimulatorError               root: anything a simulator raises of its own
    ├── LineSettingsError        fix the command line: settings or a port URL no line can take
    ├── ShoeEmptyError           load a new shoe: every card was drawn
    └── ConsoleRestartedError    press again: the console restarted before answering

The drivers' errors (``drivers.errors``) pass through unchanged.
"""

from __future__ import annotations


class SimulatorError(Exception):
    """Base of every error a simulator raises of its own."""


class LineSettingsError(SimulatorError, ValueError):
    """Line settings or a port URL that can never be opened: fix the command line."""


class ShoeEmptyError(SimulatorError):
    """Every card of the shoe was drawn: ``load()`` a new shoe."""


class ConsoleRestartedError(SimulatorError):
    """The console restarted before the press awaited was answered."""
