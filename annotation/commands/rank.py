"""`mineamongus rank STUDY... [--out DIR]`: per-role ratings, rank ranges and ties."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.commands import Command

if TYPE_CHECKING:
    import pandas as pd

    from annotation.ratings import Board

NAME = "rank"


def add_parser(subparsers: Any) -> None:
    """Register the subcommand."""
    p = subparsers.add_parser(
        NAME,
        help="per-role ratings of every player type, with intervals, rank ranges and ties",
        description=(
            "Rate every player type (model x ARIA settings, the scripted ruler, a person) "
            "as impostor and as crew from the finished, counted games of one or more "
            "studies: Bradley-Terry (choix) with bootstrap intervals clustered by seed, "
            "OpenSkill mu, sigma and mu - 3 sigma, ranks with their 95 %% ranges and tied "
            "groups, and each row's win rate against the scripted ruler. Writes "
            "DIR/ratings.csv and DIR/ratings.parquet. See docs/tournament.md (Ratings)."
        ),
    )
    p.add_argument("studies", nargs="+", type=Path, metavar="STUDY", help="study folders")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default: STUDY/ranking for one study; required for several)",
    )
    p.add_argument(
        "--min-games",
        type=int,
        default=30,
        help="mark rows with fewer games than this in their role (default 30)",
    )
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap RNG seed (default 0)")


def _num(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if math.isnan(v) else format(v, fmt)


def _range(low: Any, high: Any, fmt: str) -> str:
    lo, hi = _num(low, fmt), _num(high, fmt)
    return "-" if lo == "-" and hi == "-" else f"{lo}..{hi}"


def render(board: Board, console: Any) -> None:
    """Print the board as a rich table, impostor rows first, then crew rows."""
    from rich.table import Table

    from annotation.ratings import describe

    table = Table(title="Per-role ratings", show_lines=False)
    for name in ("player", "role", "games", "wins", "win rate [95%]", "BT [95%]", "mu",
                 "sigma", "mu-3sigma", "rank", "range", "group", "tier", "vs ruler"):  # fmt: skip
        left = name in ("player", "role", "group")
        table.add_column(name, justify="left" if left else "right", no_wrap=name == "player")
    frame: pd.DataFrame = board.table
    for row in frame.itertuples(index=False):
        marked = f"{row.player} *" if row.few_games else str(row.player)
        vs = (
            f"{_num(row.vs_ruler_win_rate, '.2f')} ({row.vs_ruler_games})"
            if row.vs_ruler_games
            else "-"
        )
        rank = "-" if row.rank is None or str(row.rank) == "<NA>" else str(row.rank)
        table.add_row(
            marked,
            str(row.role),
            str(row.games),
            str(row.wins),
            f"{_num(row.win_rate, '.2f')} [{_range(row.win_rate_low, row.win_rate_high, '.2f')}]",
            f"{_num(row.bt, '+.2f')} [{_range(row.bt_low, row.bt_high, '+.2f')}]",
            _num(row.mu, ".1f"),
            _num(row.sigma, ".1f"),
            _num(row.conservative, ".1f"),
            rank,
            _range(row.rank_low, row.rank_high, ".0f"),
            str(row.group),
            str(row.tier),
            vs,
        )
    console.print(table)
    console.print(describe(board), soft_wrap=True)
    if frame["few_games"].any():
        console.print(f"* fewer than {board.min_games} games in the role", soft_wrap=True)
    for _i, row in frame.iterrows():
        # the star already says "few games"; the other notes are printed in full
        rest = [n for n in str(row["note"]).split("; ") if n and not n.startswith("few games")]
        if rest:
            console.print(f"{row['player']} ({row['role']}): {'; '.join(rest)}", soft_wrap=True)
    for note in board.notes:
        console.print(f"note: {note}", soft_wrap=True)


def run(args: argparse.Namespace) -> int:
    """Rate, print and write the board; 2 on bad input."""
    from rich.console import Console

    from annotation.ratings import load_studies, rate

    studies: list[Path] = args.studies
    out: Path | None = args.out
    if out is None:
        if len(studies) != 1:
            print(f"{NAME}: several studies given; choose the output with --out", file=sys.stderr)
            return 2
        out = studies[0] / "ranking"
    if args.boot < 100:
        print(f"{NAME}: --boot must be at least 100 for a 95 % interval", file=sys.stderr)
        return 2
    if args.min_games < 1:
        print(f"{NAME}: --min-games must be at least 1", file=sys.stderr)
        return 2
    try:
        matches = load_studies(studies)
        board = rate(matches, min_games=args.min_games, n_boot=args.boot, seed=args.seed)
    except (ValueError, FileNotFoundError) as exc:
        print(f"{NAME}: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    board.table.to_csv(out / "ratings.csv", index=False)
    board.table.to_parquet(out / "ratings.parquet", index=False)
    console = Console(width=None if sys.stdout.isatty() else 200)
    render(board, console)
    console.print(f"wrote {out / 'ratings.csv'} and {out / 'ratings.parquet'}", soft_wrap=True)
    return 0


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `rank` (group `mineamongus.commands`)."""
