"""The subcommands of `mineamongus`, registered by the package that owns each.

A subcommand is a `Command`: its name, `add_parser(subparsers)` (registers its parser)
and `run(args) -> int` (carries it out). Each package names its commands in the
`mineamongus.commands` entry-point group of `pyproject.toml` (the controller its own,
`play`, `replay`, `tournament` and `collect`; `annotation` its `annotate`, `analyze`,
`audit`, `rank` and `view`), each entry point a `Command`; a test or a plugin may also call
`register`. The controller never imports the packages above it: it finds their commands
here.

A command module imports only what its parser needs at its top: `mineamongus --help`
loads every one of them (tests/controller/test_cli.py holds it under a second).

The live viewer that `play --view` and `tournament --view` start is a hook of the same
kind: the `mineamongus.viewers` group names a `LiveViewerStarter` (annotation's viewer).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from controller.registry import Registry

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "mineamongus.commands"
"""Each entry point of this group is a `Command` named like the entry point."""
VIEWER_GROUP = "mineamongus.viewers"
"""The entry point `live` of this group is the `LiveViewerStarter` of `--view`."""


@dataclass(frozen=True)
class Command:
    """One subcommand.

    Attributes:
        name: The subcommand (`mineamongus NAME ...`).
        add_parser: Registers the subcommand's parser on argparse's subparsers.
        run: Carries the parsed command out; returns the exit code.
        position: Where the help lists it: by position, then by name (`play` and
            `replay` come first).
    """

    name: str
    add_parser: Callable[[Any], None]
    run: Callable[[argparse.Namespace], int]
    position: int = 10


class CommandError(ValueError):
    """A command name held twice, or an entry point that is not a `Command`."""


COMMANDS: Registry[Command] = Registry(
    "command", group=ENTRY_POINT_GROUP, error=CommandError, unknown=CommandError
)
"""The subcommands by name; each `mineamongus.commands` entry point is one, loaded when
the commands are listed (`commands`) or one is looked up."""


def register(command: Command) -> None:
    """Register a subcommand (registering an equal one again is a no-op).

    Raises:
        CommandError: Another command already holds the name.
    """
    COMMANDS.register(command.name, command)


def _loaded(name: str) -> Command | None:
    """The command of that name, its entry point loaded and checked (None: it fails)."""
    try:
        command = COMMANDS.get(name)
        if not isinstance(command, Command) or command.name != name:
            raise CommandError(f"{name!r} is not the Command {name!r}")
    except Exception:  # a broken plugin must not take the other commands down
        log.exception("command %s failed to load", name)
        COMMANDS.remove(name)
        return None
    return command


def commands() -> list[Command]:
    """Every registered subcommand, in the order the help lists them."""
    found = [c for c in map(_loaded, COMMANDS.names()) if c is not None]
    return sorted(found, key=lambda c: (c.position, c.name))


def get_command(name: str) -> Command | None:
    """The subcommand registered under `name`, or None."""
    return _loaded(name) if name in COMMANDS else None


class LiveViewer(Protocol):
    """A viewer serving a run or study folder while it is written."""

    @property
    def url(self) -> str:
        """The address to open."""
        ...

    def stop(self) -> None:
        """Stop serving."""
        ...


class LiveViewerStarter(Protocol):
    """Starts a `LiveViewer` on loopback, in a thread of this process."""

    def __call__(self, folder: Path, port: int | None = None) -> LiveViewer:
        """Serve `folder` on `port` (None: a free one).

        Raises:
            RuntimeError: The viewer could not start (the message says why).
        """
        ...


VIEWERS: Registry[LiveViewerStarter] = Registry("live viewer", group=VIEWER_GROUP)
"""The live viewers by name (`live`: the one `--view` starts)."""


class NoViewerError(RuntimeError):
    """No package registers a live viewer (the annotation package is not installed)."""


def start_live_viewer(folder: Path, port: int | None = None) -> LiveViewer:
    """Start the registered live viewer on `folder`.

    Raises:
        RuntimeError: It could not start, or none is registered (`NoViewerError`).
    """
    if "live" not in VIEWERS:
        raise NoViewerError(f"no live viewer is installed (entry point {VIEWER_GROUP}: live)")
    return VIEWERS.get("live")(folder, port=port)
