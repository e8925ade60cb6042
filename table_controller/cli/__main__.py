"""``python -m table_controller.cli``: the same entry point as ``table-controller``."""

from table_controller.cli import main

raise SystemExit(main())
