"""``table-controller sim DEVICE``: one simulated device, served by ``simulators.cli``."""

from simulators.cli import configure as configure
from simulators.cli import run as run
