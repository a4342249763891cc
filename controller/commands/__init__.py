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
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from controller.plugins import entry_points

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


_lock = threading.Lock()
_commands: dict[str, Command] = {}
_loaded = False


class CommandError(ValueError):
    """A command name held twice, or an entry point that is not a `Command`."""


def register(command: Command) -> None:
    """Register a subcommand (registering an equal one again is a no-op).

    Raises:
        CommandError: Another command already holds the name.
    """
    with _lock:
        held = _commands.get(command.name)
        if held is not None and held != command:
            raise CommandError(f"command {command.name!r} is already registered")
        _commands[command.name] = command


def _load() -> None:
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
    for entry in entry_points(ENTRY_POINT_GROUP):
        try:
            command = entry.load()
            if not isinstance(command, Command) or command.name != entry.name:
                raise CommandError(f"{entry.value} is not the Command {entry.name!r}")
            register(command)
        except Exception:  # a broken plugin must not take the other commands down
            log.exception("command %s (%s) failed to load", entry.name, entry.value)


def commands() -> list[Command]:
    """Every registered subcommand, in the order the help lists them."""
    _load()
    return sorted(_commands.values(), key=lambda c: (c.position, c.name))


def get_command(name: str) -> Command | None:
    """The subcommand registered under `name`, or None."""
    _load()
    return _commands.get(name)


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


class NoViewerError(RuntimeError):
    """No package registers a live viewer (the annotation package is not installed)."""


def start_live_viewer(folder: Path, port: int | None = None) -> LiveViewer:
    """Start the registered live viewer on `folder`.

    Raises:
        RuntimeError: It could not start, or none is registered (`NoViewerError`).
    """
    for entry in entry_points(VIEWER_GROUP):
        if entry.name == "live":
            start: LiveViewerStarter = entry.load()
            return start(folder, port=port)
    raise NoViewerError(f"no live viewer is installed (entry point {VIEWER_GROUP}: live)")
