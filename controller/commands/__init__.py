"""Subcommands of `mineamongus`, one module each, found by name.

A module here defines `NAME` (the subcommand), `add_parser(subparsers)` (registers its
parser) and `run(args) -> int` (carries it out). `controller.cli` discovers every
module of this package, so adding a subcommand is adding a file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """One discovered subcommand."""

    name: str
    add_parser: Callable[[Any], None]
    run: Callable[[argparse.Namespace], int]


def discover() -> list[Command]:
    """Every subcommand module of this package, sorted by name."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        found.append(Command(name=mod.NAME, add_parser=mod.add_parser, run=mod.run))
    return found
