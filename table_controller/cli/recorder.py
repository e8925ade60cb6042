"""``table-controller recorder --config recorder.toml``: the pit's system of record."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from table_controller.recorder.config import load_config
from table_controller.recorder.errors import RecorderError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="the recorder's TOML config")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO)")


def run(args: argparse.Namespace) -> int:
    from table_controller.recorder.process import serve

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        cfg = load_config(args.config)
        asyncio.run(serve(cfg))
    except RecorderError as exc:
        print(f"table-controller recorder: {exc}", file=sys.stderr)
        return 2
    return 0
