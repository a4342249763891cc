"""`mineamongus replay DIR`: videos of a played game from its folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from controller.commands import Command


def add_parser(sub: Any) -> None:
    """Register `replay`."""
    p = sub.add_parser("replay", help="videos of a played game from its folder")
    p.add_argument("run", type=Path, help="the folder a game wrote (--out of play)")


def run(args: argparse.Namespace) -> int:
    """`mineamongus replay DIR`."""
    from controller.replay import ReplayError, replay

    try:
        made = replay(args.run, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except ReplayError as exc:
        print(f"mineamongus: {exc}", file=sys.stderr)
        return 2
    for name, path in made.items():
        print(f"{name}: {path}")
    return 0


COMMAND = Command("replay", add_parser, run, position=1)
"""The entry point of `replay` (group `mineamongus.commands`)."""
