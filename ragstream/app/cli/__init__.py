"""The `ragstream` command. Each subcommand is a thin door onto the RunSession and Workspace the GUI uses."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ragstream.app.cli import eval, models, projects, run, serve, stages, threads
from ragstream.errors import RagstreamError

if TYPE_CHECKING:
    from ragstream.settings import Settings

# The command groups, in the order `ragstream --help` lists their commands.
GROUPS = (stages, projects, run, eval, threads, serve, models)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragstream", description=__doc__)
    parser.add_argument("--data-dir", help="data root (overrides RAGSTREAM_DATA_DIR and config)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v: info, -vv: debug)")
    parser.add_argument("-q", "--quiet", dest="log_errors_only", action="store_true", help="log errors only")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return parser


def configure_logging(verbose: int, quiet: bool) -> None:
    """Warnings by default, so a library's log lines never interleave with the prompt on stdout."""
    level = logging.ERROR if quiet else {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)  # libraries that set their own logger's level (bm25s: DEBUG) still obey the CLI
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose, args.log_errors_only)
    handler: Callable[[argparse.Namespace, Settings], int] = args.handler
    from ragstream.settings import load_settings  # pydantic: not for `--help`, which exits in parse_args

    try:
        overrides = {"data_dir": args.data_dir} if args.data_dir else None
        code = handler(args, load_settings(overrides=overrides))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below, not at interpreter exit
        return code
    except RagstreamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ragstream ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
