"""The ``table-controller`` command.

Each subcommand is one thin module here (``cli/<command>.py``), imported only
when it is chosen, so a quick command (``odds``) does not pay for the service's
imports. A module provides ``configure(parser)`` (its options) and
``run(args) -> int`` (the exit status), and calls library code for the work.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol

from table_controller import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    name: (f"table_controller.cli.{name}", help_)
    for name, help_ in (
        ("run", "run the table service from a config file"),
        ("odds", "exact house edge and variance of a rules profile"),
        ("history", "hand records rebuilt from the journal"),
        ("pit", "live pit display of every table of a site"),
        ("schema", "write the JSON Schemas and AsyncAPI document"),
        ("sim", "run one simulated device for a test rig"),
        ("demo", "a whole simulated table with a broker and a pit view"),
        ("scenario", "run scenario files against the controller"),
        ("recorder", "store every table's feed in a database and serve the pit"),
        ("records", "read the recorder's database: rounds, report"),
        ("users", "read-only logins of the web pit display"),
    )
}
"""Command → (its module under ``table_controller.cli``, its one-line help)."""


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
