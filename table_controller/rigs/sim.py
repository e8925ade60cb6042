"""``table-controller sim DEVICE``: one simulated device for a test rig (``simulators.cli``).

The rigs are the one door to the simulators, so the command reaches them through here.
"""

from simulators.cli import configure as configure
from simulators.cli import run as run
