"""``table-controller scenario``: the test rig's own command, defined with it in ``rigs``."""

from table_controller.rigs.scenario import configure as configure
from table_controller.rigs.scenario import run as run
