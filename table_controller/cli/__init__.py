"""The ``table-controller`` command.

Each subcommand lives in its own module, imported only when it is chosen, so a
quick command (``odds``) does not pay for the service's imports. A module
provides ``configure(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol

from table_controller import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("table_controller.service.service", "run the table service from a config file"),
    "odds": ("table_controller.tools.odds", "exact house edge of a rules profile"),
    "history": ("table_controller.tools.history", "hand records rebuilt from the journal"),
    "journal": ("table_controller.cli.journal", "verify a journal's checkpoints (auditors)"),
    "pit": ("table_controller.pit.display", "live pit display of every table of a site"),
    "schema": ("table_controller.feed.schema", "write the JSON Schemas and AsyncAPI document"),
    "sim": ("simulators.cli", "run one simulated device for a test rig"),
    "demo": ("table_controller.rigs.demo", "a whole simulated table with a broker and a pit view"),
    "scenario": ("table_controller.rigs.scenario", "run scenario files against the controller"),
    "recorder": ("table_controller.cli.recorder", "store every table's feed in a database"),
    "records": ("table_controller.cli.records", "read the recorder's database: rounds, report"),
}


class Command(Protocol):
    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="table-controller",
        description="Casino War table controller",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n"
        + "\n".join(f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items()),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("command", choices=sorted(COMMANDS), metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser()
    if not args or args[0].startswith("-"):
        top.parse_args(args or ["--help"])
        return 2
    name = args[0]
    if name not in COMMANDS:
        top.parse_args(args[:1])
        return 2
    module_name, help_ = COMMANDS[name]
    try:
        command: Command = importlib.import_module(module_name)
    except KeyboardInterrupt:
        # Ctrl-C while the command loads: nothing runs yet, so nothing to stop or report.
        return 130
    parser = argparse.ArgumentParser(prog=f"table-controller {name}", description=help_)
    command.configure(parser)
    return command.run(parser.parse_args(args[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
