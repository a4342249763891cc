"""`mineamongus collect DIR`: rebuild a study's result tables from its run folders."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from controller.commands import Command

NAME = "collect"


def add_parser(subparsers: Any) -> None:
    """Register `collect`."""
    p = subparsers.add_parser(
        NAME,
        help="rebuild DIR/results/games.parquet and seats.parquet from the run folders",
    )
    p.add_argument("study", type=Path, metavar="DIR", help="study folder (--out of tournament)")


def run(args: argparse.Namespace) -> int:
    """`mineamongus collect DIR`."""
    # Imported here so that building the parser (every `play`) does not load pyarrow.
    from controller.tournament.collect import CollectError, collect

    try:
        tables = collect(args.study, progress=lambda line: print(line, file=sys.stderr))
    except CollectError as exc:
        print(f"mineamongus collect: {exc}", file=sys.stderr)
        return 2
    print(f"{tables.games}: {tables.n_games} row(s)")
    print(f"{tables.seats}: {tables.n_seats} row(s)")
    return 0


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `collect` (group `mineamongus.commands`)."""
