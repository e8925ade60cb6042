"""``table-controller sim DEVICE``: one simulated device, defined with the rigs."""

from table_controller.rigs.sim import configure as configure
from table_controller.rigs.sim import run as run
