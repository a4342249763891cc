"""`mineamongus analyze RUN_OR_TOURNAMENT... --out DIR`: statistics, figures and report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.commands import Command

NAME = "analyze"


def add_parser(subparsers: Any) -> None:
    """Register the subcommand."""
    p = subparsers.add_parser(
        NAME,
        help="atom statistics, agreement and the report over annotated games",
        description=(
            "Read every run folder at or under the given paths (events.jsonl, summary.json, "
            "annotations.jsonl; a tournament's results/games.parquet when present) and write "
            "DIR/report.html, DIR/report.md, DIR/figures/ and DIR/tables/*.parquet|csv."
        ),
    )
    p.add_argument("paths", nargs="+", type=Path, help="run folders or tournament folders")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument(
        "--human",
        type=Path,
        action="append",
        default=[],
        help="human label file (.csv or .jsonl: annotator,game,atom,step,actor,evidence); "
        "repeatable",
    )
    p.add_argument(
        "--boot", type=int, default=1000, help="bootstrap resamples per interval (default 1000)"
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap RNG seed (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Analyse and write the report; 1 when a registered result failed (its section in the
    report says why), 2 on bad input."""
    from annotation.report.analysis import analyze

    if args.boot < 100:
        print("analyze: --boot must be at least 100 for a 95 % interval", file=sys.stderr)
        return 2
    try:
        tables = analyze(
            args.paths,
            args.out,
            human=args.human,
            n_boot=args.boot,
            seed=args.seed,
            progress=not args.quiet,
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"analyze: {exc}", file=sys.stderr)
        return 2
    index = tables["results_index"]
    failed = sorted(index.loc[index["status"] != "ok", "result"])
    print(
        json.dumps(
            {
                "games": len(tables["games"]),
                "report": str(args.out / "report.html"),
                "tables": sorted(tables),
                "results": len(index),
                "failed_results": failed,
            }
        )
    )
    if failed:
        print(
            f"analyze: {len(failed)} result(s) failed (see the report): {failed}", file=sys.stderr
        )
    return 1 if failed else 0


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `analyze` (group `mineamongus.commands`)."""
