"""``table-controller demo``: the test rig's own command, defined with it in ``rigs``."""

from table_controller.rigs.demo import configure as configure
from table_controller.rigs.demo import run as run
