"""``table-controller schema --out DIR``: write the JSON Schemas and the AsyncAPI document."""

from __future__ import annotations

import argparse
from pathlib import Path

from table_controller.feed.schema import write


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="folder to write schemas/*.json and asyncapi.yaml into (the project ships docs/)",
    )


def run(args: argparse.Namespace) -> int:
    for path in write(args.out):
        print(path)
    return 0
