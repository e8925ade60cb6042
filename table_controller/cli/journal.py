"""``table-controller journal verify --config F``: check a table's journal (the auditor's tool)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from table_controller.service.config import ConfigError, load_config
from table_controller.service.errors import EXIT_CONFIG, EXIT_JOURNAL, JournalError
from table_controller.service.journal import Journal
from table_controller.tools.journal_verify import report, verify


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = sub.add_parser(
        "verify",
        help="replay from the oldest checkpoint held and check every later one",
        description="Replay the journal from its oldest checkpoint and check that every "
        "later checkpoint comes out equal; read-only, may run beside the table.",
    )
    check.add_argument("--config", required=True, type=Path, help="table config (TOML)")


def run(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"table-controller journal: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        with Journal(cfg.storage.path, readonly=True) as journal:
            return report(journal, cfg, verify(cfg, journal), sys.stdout)
    except JournalError as exc:
        print(f"table-controller journal: {exc}", file=sys.stderr)
        return EXIT_JOURNAL
