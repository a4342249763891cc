"""The ratings board of a study, as the viewer's study page shows it (`GET /api/board`).

The board is `mineamongus rank` on the study's finished games (`annotation.ratings`):
every player type rated as impostor and as crew, Bradley-Terry with bootstrap
intervals, OpenSkill mu, sigma and mu - 3 sigma, ranks with their ranges, tied groups
and tiers, the rows with too few games marked, and each row's win rate against the
scripted ruler. Its games are the ones `mineamongus collect` tables count:

- every attempt folder of the study's layout, `games/<arm>/seed<N>-try<K>`, whether
  or not the manifest names it: a game played apart (a person's seat, say) and put
  into the layout, e.g. `mineamongus play ... --out STUDY/games/<arm>/seed<N>-try1`,
  is rated with the others, as `collect` then `rank` rate it;
- per arm and seed, the first attempt whose game finished `ok` (its `summary.json`);
  a game still being played, an invalid one and a game without a winner stay off;
- a game whose `game_start` cannot be read is left off and named in the notes.

The fit is cached by the set of finished attempt folders and their files' sizes and
times, so a page that asks again (it does on every finished game, and now and then for
games put there by hand) is answered from the cache until a game finishes. The board
names the side each player type played, and a row of a person who sat among agents
tells that seat's role, so it is an analyst view: the API answers it only to
`analyst=1` or the analyst token (`annotation.viewer.access.AnalystGrant`); a blinded
annotator is told so. Only finished games are rated, so a game a person is playing
adds nothing until it ends.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from annotation.ratings import (
    COLUMNS,
    DEFAULT_BOOT,
    MIN_GAMES,
    ROLES,
    PlayedSide,
    build_matches,
    describe,
    impostor_win,
    rate,
    read_start,
    sides_from_start,
)
from annotation.viewer.access import Access, AnalystGrant
from controller.record import LOG_FILE, SUMMARY_FILE, has_log, study_place
from controller.tournament.manifest import MANIFEST
from controller.tournament.process import read_summary

MIN_BOARD_GAMES = 2
"""Fewer finished games with a winner than this and the board is a message, not a
table: one game is a coin toss between two rows, not a rating."""
GAMES_DIR = "games"
"""The folder of a study's attempt folders (`games/<arm>/seed<N>-try<K>`)."""

Key = tuple[tuple[str, int, int, int, int], ...]
"""What the cache is keyed by: per finished attempt folder (one with a summary) its
path in the study and its summary's and log's size and modification time."""


@dataclass(frozen=True)
class Attempt:
    """One finished attempt folder of a study's layout."""

    run: str
    """Its path relative to the study folder (`games/<arm>/seed<N>-try<K>`)."""
    arm: str
    seed: int
    attempt: int


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def finished_attempts(study: Path) -> tuple[list[Attempt], int, Key]:
    """The attempt folders of `study/games/` whose game wrote its summary, the number
    of attempt folders still without one, and the cache key of the finished ones."""
    games = study / GAMES_DIR
    found: list[Attempt] = []
    key: list[tuple[str, int, int, int, int]] = []
    waiting = 0
    if not games.is_dir():
        return found, waiting, ()
    for arm_dir in sorted(p for p in games.iterdir() if p.is_dir()):
        for run in sorted(p for p in arm_dir.iterdir() if p.is_dir()):
            place = study_place(run)
            if place is None:
                continue
            summary = _stat(run / SUMMARY_FILE)
            if summary is None:
                waiting += 1
                continue
            log = _stat(run / LOG_FILE) or (0, 0)
            rel = f"{GAMES_DIR}/{arm_dir.name}/{run.name}"
            found.append(Attempt(rel, place.arm, place.seed, place.attempt))
            key.append((rel, *summary, *log))
    return found, waiting, tuple(key)


def _plain(value: Any) -> Any:
    """A table cell as JSON: NaN and missing values are null."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):  # a numpy scalar
        value = value.item()
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    return str(value)


def table_rows(table: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """A ratings table (`annotation.ratings.COLUMNS`) as JSON rows per role, in the
    table's order (by rank)."""
    out: dict[str, list[dict[str, Any]]] = {role: [] for role in ROLES}
    for record in table.to_dict(orient="records"):
        out[str(record["role"])].append({c: _plain(record[c]) for c in COLUMNS})
    return out


def message(status: str, text: str, **extra: Any) -> dict[str, Any]:
    """A board answer without a table (`status` says why)."""
    return {"status": status, "message": text, "roles": {r: [] for r in ROLES}, **extra}


WITHHELD = message(
    "withheld",
    "The ratings board names the side each player type played (and a person's seat's "
    "role): it is an analyst view. Tick 'analyst' or open the study with ?analyst=1.",
)
"""The answer to a request without the analyst view."""


class StudyBoard:
    """The board of one folder, fitted again only when its set of finished games
    changes (thread-safe: one fit at a time, the others wait for it).

    Args:
        folder: A study folder (the `--out` of `mineamongus tournament`, or any folder
            with a `games/<arm>/seed<N>-try<K>` layout).
        n_boot: Bootstrap resamples (as `rank --boot`).
        seed: The bootstrap's seed (as `rank --seed`).
        min_games: Rows with fewer games in their role are marked (as `rank --min-games`).
    """

    def __init__(
        self,
        folder: Path,
        *,
        n_boot: int = DEFAULT_BOOT,
        seed: int = 0,
        min_games: int = MIN_GAMES,
    ) -> None:
        self.folder = Path(folder)
        self.n_boot = n_boot
        self.seed = seed
        self.min_games = min_games
        self.fits = 0
        """How many times the board was computed (a cached answer adds none)."""
        self._lock = threading.Lock()
        self._cached: tuple[Key, dict[str, Any]] | None = None

    def answer(self) -> dict[str, Any]:
        """The board as JSON: `status` `ok` with per-role rows (`roles.impostor`,
        `roles.crew`, each row the columns of `annotation.ratings.COLUMNS`), what it
        rests on and its notes; otherwise a `message` saying why there is no table
        (`too_few`, `one_game`, `not_a_study`, `error`)."""
        folder = self.folder
        if has_log(folder):
            return message(
                "one_game",
                "This folder holds one game, not a study: a board rates player types over "
                "many games. Put the game in a study's layout "
                f"(STUDY/{GAMES_DIR}/<arm>/seed<N>-try1) and view the study.",
            )
        if not (folder / GAMES_DIR).is_dir():
            if (folder / MANIFEST).is_file():
                return message(
                    "too_few",
                    "No game of this study has finished yet; the board needs at least "
                    f"{MIN_BOARD_GAMES} finished games with a winner.",
                    n_games=0,
                )
            return message(
                "not_a_study",
                f"This folder is not a study (no {MANIFEST}, no {GAMES_DIR}/ folder): the "
                "board rates the finished games of a study.",
            )
        with self._lock:
            attempts, waiting, key = finished_attempts(folder)
            cached = self._cached
            if cached is not None and cached[0] == key:
                result = cached[1]
            else:
                result = self._fit(attempts)
                version = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
                result = {**result, "version": version, "fits": self.fits}
                self._cached = (key, result)
        # A game that starts changes no rating: it is only counted in the notes.
        playing = (
            [f"{waiting} game(s) still being played or without a summary (not rated yet)"]
            if waiting
            else []
        )
        return {**result, "playing": waiting, "notes": [*playing, *result.get("notes", [])]}

    def _fit(self, attempts: list[Attempt]) -> dict[str, Any]:
        counted: dict[tuple[str, int], Attempt] = {}
        retried = 0
        not_ok = 0
        summaries: dict[str, dict[str, Any]] = {}
        for a in sorted(attempts, key=lambda a: (a.arm, a.seed, a.attempt)):
            summary = read_summary(self.folder / a.run) or {}
            summaries[a.run] = summary
            if summary.get("status") != "ok":
                not_ok += 1
            elif (a.arm, a.seed) in counted:
                retried += 1
            else:
                counted[(a.arm, a.seed)] = a
        rows: list[tuple[str, pd.Series, tuple[PlayedSide, PlayedSide]]] = []
        no_winner = 0
        unreadable: list[str] = []
        for a in counted.values():
            summary = summaries[a.run]
            win = impostor_win(summary.get("winner"))
            if win is None:
                no_winner += 1
                continue
            start = read_start(self.folder / a.run)
            if start is None:
                unreadable.append(a.run)
                continue
            row = pd.Series(
                {
                    "game_id": summary.get("game_id") or f"{a.arm}/{Path(a.run).name}",
                    "arm": a.arm,
                    "seed": a.seed,
                    "attempt": a.attempt,
                    "impostor_win": win,
                }
            )
            rows.append((str(self.folder), row, sides_from_start(start)))
        notes = []
        if not_ok:
            notes.append(f"{not_ok} attempt(s) that did not end ok (invalid or failed; left out)")
        if retried:
            notes.append(f"{retried} later attempt(s) of a game already counted (left out)")
        if no_winner:
            notes.append(f"{no_winner} finished game(s) without a winner (left out)")
        if unreadable:
            shown = ", ".join(unreadable[:5]) + (" ..." if len(unreadable) > 5 else "")
            notes.append(f"{len(unreadable)} game(s) whose game_start cannot be read: {shown}")
        if len(rows) < MIN_BOARD_GAMES:
            return message(
                "too_few",
                f"{len(rows)} finished game(s) with a winner so far; the board needs at least "
                f"{MIN_BOARD_GAMES}.",
                n_games=len(rows),
                notes=notes,
            )
        self.fits += 1
        try:
            board = rate(
                build_matches(rows), min_games=self.min_games, n_boot=self.n_boot, seed=self.seed
            )
        except (ValueError, RuntimeError) as exc:
            return message("error", f"the ratings could not be fitted: {exc}", notes=notes)
        return {
            "status": "ok",
            "message": "",
            "n_games": board.n_games,
            "n_clusters": board.n_clusters,
            "cluster_by": board.cluster_by,
            "n_boot": board.n_boot,
            "failed_fits": board.failed_fits,
            "min_games": board.min_games,
            "describe": describe(board),
            "notes": [*notes, *board.notes],
            "roles": table_rows(board.table),
        }


def board_endpoint(
    folder: Path, access: Access, board: StudyBoard | None = None
) -> Callable[[Request], Awaitable[Response]]:
    """The `GET /api/board` endpoint of a folder's viewer: the board (`StudyBoard`) to
    the analyst view (`analyst=1` or the analyst token), a 403 with `WITHHELD` to
    anyone else."""
    study = board if board is not None else StudyBoard(folder)

    async def endpoint(request: Request) -> Response:
        grant = AnalystGrant.of_request(request, access)
        if not grant.analyst:
            return JSONResponse(WITHHELD, status_code=403)
        return JSONResponse(await asyncio.to_thread(study.answer))

    return endpoint


__all__ = [
    "MIN_BOARD_GAMES",
    "WITHHELD",
    "Attempt",
    "StudyBoard",
    "board_endpoint",
    "finished_attempts",
    "message",
    "table_rows",
]
