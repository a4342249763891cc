"""`mineamongus view RUN|STUDY [--port P] [--host H [--allow-remote]] [--labels DIR]`: the
game viewer (a study folder gets a page listing its games, each opening in the game
viewer). Who can reach it and what they see: `annotation.viewer.access`.

A game's record that cannot be read (a line that is not JSON, a file that is not text,
a log cut beside its summary, an empty log no process writes) is refused before
serving, with the shared reader's error (file, line, fix) and exit status 2; a record
that turns unreadable while it is served, and each unreadable game of a study, is
printed once on stderr (and shown in the page). A game still being written is served
and followed live (`annotation.viewer.record` says how the two are told apart)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.commands import Command, LiveViewer

if TYPE_CHECKING:
    from annotation.viewer.record import RecordProblem

NAME = "view"


def add_parser(sub: Any) -> None:
    """Register `view`."""
    p = sub.add_parser(NAME, help="watch, replay and label a game in the browser")
    p.add_argument(
        "run",
        type=Path,
        metavar="RUN|STUDY",
        help="the folder a game wrote (--out of play), or a study folder (--out of tournament)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="port to listen on; refused when taken (default 8765, or a free port when "
        "8765 is taken)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default loopback only; the page shows private records; "
        "any other address needs --allow-remote)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="permit a --host that is not loopback: anyone who can reach it reads every "
        "role and private record and can save labels",
    )
    p.add_argument(
        "--labels",
        type=Path,
        default=None,
        help="folder for hand labels, one JSONL file per annotator (default RUN/labels; "
        "for a study, DIR/RUN/ per game)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve the viewer until Ctrl-C."""
    from annotation.viewer.access import RemoteBindError, check_bind, is_loopback, remote_warning
    from annotation.viewer.record import record_problem
    from annotation.viewer.server import DEFAULT_PORT, BackgroundViewer, ViewerError, serve
    from annotation.viewer.study import is_study
    from controller.record import has_log

    try:
        check_bind(args.host, args.allow_remote)
    except RemoteBindError as exc:
        print(f"mineamongus: {exc}", file=sys.stderr)
        return 2

    study = is_study(args.run)
    if not has_log(args.run) and not study:
        print(
            f"mineamongus: neither {args.run}/events.jsonl nor {args.run}/manifest.json "
            "found; give a game's --out folder or a study folder",
            file=sys.stderr,
        )
        return 2
    if not study and (problem := record_problem(args.run)) is not None:
        print(f"mineamongus: {problem_line(problem)}", file=sys.stderr)
        return 2

    def report(problem: RecordProblem) -> None:
        print(f"mineamongus: {problem_line(problem)}", file=sys.stderr, flush=True)

    def started(viewer: BackgroundViewer) -> None:
        if args.port is None and viewer.port != DEFAULT_PORT:
            print(
                f"port {DEFAULT_PORT} is in use (another viewer?); serving on {viewer.port}",
                file=sys.stderr,
            )
        if not is_loopback(args.host):
            print(remote_warning(args.host, viewer.port), file=sys.stderr)
        print(f"viewer: {viewer.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
        print(analyst_line(viewer.analyst_url), file=sys.stderr, flush=True)

    try:
        # An explicit --port is refused when taken; the default falls back to a free
        # port. Either way the address printed is the one this process listens on.
        serve(
            args.run,
            args.host,
            args.port if args.port is not None else DEFAULT_PORT,
            args.labels,
            fallback=args.port is None,
            on_start=started,
            allow_remote=args.allow_remote,
            report=report,
        )
    except ViewerError as exc:
        print(f"mineamongus: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `view` (group `mineamongus.commands`)."""


def problem_line(problem: RecordProblem) -> str:
    """The terminal's words for a record that cannot be shown."""
    return f"cannot show this record: {problem.message}"


def analyst_line(analyst_url: str) -> str:
    """The line that hands the experimenter the analyst address (never a player)."""
    return (
        f"viewer analyst address (roles and private records even while a person plays a "
        f"seat; keep it from the players): {analyst_url}"
    )


def start_live(folder: Path, port: int | None = None) -> LiveViewer:
    """Serve `folder` (a run or a study being written) from a thread of this process: the
    live viewer of `play --view` and `tournament --view` (group `mineamongus.viewers`).
    Prints the analyst address to stderr (the caller prints the page's address).

    Raises:
        ViewerError: It could not start (a RuntimeError; the message says why).
    """
    from annotation.viewer.server import start_background

    viewer = start_background(folder, port=port)
    # For the person running the game, not a log line (as the human seat's address).
    print(analyst_line(viewer.analyst_url), file=sys.stderr, flush=True)
    return viewer
