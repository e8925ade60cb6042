"""The rigs' errors, sorted by what the caller can do.

- :class:`RigUnavailable` (retry, or install what it names): a part the rig
  starts or reaches is not there: the broker binary, a port, a serial line.
- :class:`RigConfigError` (fix the file): a scenario file or a ``rig.toml``
  cannot be used; the message names the file, the line and the key.
- :class:`TableMisbehaved` (fatal for the run): the table under test did not
  answer as the game requires; the message says what was awaited.
"""

from __future__ import annotations


class RigError(Exception):
    """Root of the rigs' errors."""


class RigUnavailable(RigError):
    """Something the rig needs could not be started or reached."""


class BrokerError(RigUnavailable):
    """The Mosquitto broker could not be started."""


class RigConfigError(RigError):
    """A rig's file cannot be used; the message names the file, line and key."""


class ScenarioError(RigConfigError):
    """A scenario file cannot be used; the message names the file, step, line and field."""


class TableMisbehaved(RigError):
    """The table did not answer as the game requires (see the controller's log)."""


class DemoError(TableMisbehaved):
    """The demo's table did not answer as the game requires; the message says what was
    awaited."""
