"""``table-controller history``: hand records rebuilt from a journal (``tools.history``)."""

from table_controller.tools.history import configure as configure
from table_controller.tools.history import run as run
