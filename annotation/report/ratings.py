"""The board of a study as a registered result: per-role ratings (`core.ratings`).

The same fit as `mineamongus rank` (`annotation.ratings`) over the study's valid games:
every player type rated as impostor and as crew, Bradley-Terry with bootstrap
intervals, OpenSkill mu, sigma and mu - 3 sigma, rank ranges and tied groups, and the
win rate against the scripted ruler. Writes `tables/ratings.csv` (and `.parquet`) and
`figures/ratings.png`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import annotation.report.core  # noqa: F401  (core.* register first: its overview leads)
from annotation.ratings import ROLES, Board, describe, matches_from_runs, rate
from annotation.report.document import Figure, Section, Table, Text, Warning_
from annotation.report.figures import empty_panel, error_bars, new_figure, save
from annotation.report.results import ResultOutput, StudyData, result

FIGURE = "ratings.png"
"""The figure's file name under `figures/`."""
TITLE = "Per-role Bradley-Terry ratings with 95 % bootstrap intervals"
"""The figure's title."""


def ratings_figure(board: Board, path: Path) -> Path:
    """One panel per role: each player's rating (dot) and interval (bar), best at the
    top, labelled with its tied group; rows with too few games hollow and starred."""
    table = board.table
    height = max(3.0, 0.35 * max((table["role"] == r).sum() for r in ROLES) + 1.6)
    fig, axes = new_figure(1, 2, size=(11.0, height))
    for ax, role in zip(axes[0], ROLES, strict=True):
        part = table[table["role"] == role].reset_index(drop=True)
        if part.empty:
            empty_panel(ax, f"no game as {role}")
            ax.set_title(f"as {role}")
            continue
        y = np.arange(len(part))[::-1]
        value = part["bt"].to_numpy(dtype=float)
        err = error_bars(value, part["bt_low"], part["bt_high"])
        few = part["few_games"].to_numpy(dtype=bool)
        ax.errorbar(value, y, xerr=err, fmt="none", ecolor="0.45", capsize=3)
        if (~few).any():
            ax.scatter(value[~few], y[~few], color="C0", zorder=3, label="rated")
        if few.any():
            ax.scatter(
                value[few],
                y[few],
                facecolors="white",
                edgecolors="C3",
                zorder=3,
                label=f"< {board.min_games} games (*)",
            )
        labels = [
            f"{p}{' *' if f else ''}  [{g}]"
            for p, f, g in zip(part["player"], few, part["group"], strict=True)
        ]
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_ylim(-0.7, len(part) - 0.3)
        ax.axvline(0.0, color="0.8", linewidth=0.8, zorder=0)
        ax.set_xlabel("Bradley-Terry rating (log-odds)")
        ax.set_title(f"as {role} (rank order; [tied group])", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(TITLE)
    return save(fig, path)


@result("core.ratings", "Per-role ratings, rank ranges and tied groups (ours)")
def ratings(data: StudyData) -> ResultOutput:
    """The study's board (see the module)."""
    sec = Section("Per-role ratings")
    if data.games.empty:
        sec.blocks.append(Warning_("No valid game: nothing to rate."))
        return ResultOutput(tables={"ratings": pd.DataFrame()}, sections=[sec])
    matches = matches_from_runs(data.games, study=str(data.out))
    board = rate(matches, n_boot=data.n_boot, seed=data.seed)
    data.figdir.mkdir(parents=True, exist_ok=True)
    path = ratings_figure(board, data.figdir / FIGURE)
    sec.blocks.append(
        Text(
            "Every player type (model with the ARIA settings that vary, the scripted ruler, "
            "a person) is rated as impostor and as crew: a game is a match between the "
            "impostor side's type and the crew side's. " + describe(board)
        )
    )
    few = board.table[board.table["few_games"]]
    if len(few):
        sec.blocks.append(
            Warning_(
                f"{len(few)} row(s) rest on fewer than {board.min_games} games in their "
                "role: shown, but too small a sample to read."
            )
        )
    sec.blocks += [Warning_(note) for note in board.notes]
    sec.blocks.append(Table(board.table, "Per-role ratings (impostor rows, then crew rows)"))
    sec.blocks.append(
        Figure(path, "Bradley-Terry rating per player type and role, with 95 % intervals")
    )
    return ResultOutput(tables={"ratings": board.table}, sections=[sec], figures=[path])
