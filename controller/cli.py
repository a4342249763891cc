"""The `mineamongus` command: one entry point, one subcommand per job.

The subcommands are registered by the packages that own them (`controller.commands`:
the `mineamongus.commands` entry-point group); this module only builds the parser from
them and runs the one asked for. It imports no package above the controller.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from controller.commands import commands, get_command

# `play`'s helpers, used by scripts and tests as `controller.cli.play_game` and the like.
from controller.commands.play import config_from_args as config_from_args
from controller.commands.play import make_world as make_world
from controller.commands.play import occupied_by as occupied_by
from controller.commands.play import play_game as play_game

log = logging.getLogger("mineamongus")


class _Version(argparse.Action):
    """`--version`: the package version and the source revision it runs from."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("nargs", 0)
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from controller.versions import version_line

        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `mineamongus`, with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="mineamongus",
        description="Among Us in Minecraft for vision-language-model agents.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument(
        "--version", action=_Version, help="print the version and source revision, then exit"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands():
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `mineamongus` command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    command = get_command(args.command)
    return command.run(args) if command is not None else 2


if __name__ == "__main__":
    sys.exit(main())
