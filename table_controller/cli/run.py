"""``table-controller run --config FILE``: the table service, defined with it in ``service``."""

from table_controller.service.service import configure as configure
from table_controller.service.service import run as run
