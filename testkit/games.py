"""Whole fake-world games played once per test run and shared by every test that reads
them.

A game of the in-process fake world is fixed by its configuration: the same preset and
overrides give the same rule events (`controller.checks.determinism_check`).
`GameStore` plays each configuration asked of it once, into a folder named after the
configuration, and hands the same folder to every later request. Several processes may
share one store (the parallel test workers): a per-game lock (`flock`) keeps two of them
from playing the same game at once, and a game is played into a private folder and
renamed into place, so a reader never sees half a record.

The folders are shared: a test reads them and writes nothing into them (one that must
write copies the folder first, `copy_to`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from controller.commands.play import play_game
from controller.config import resolve_config
from controller.events import Event, read_events
from world.spec import load_map

OFFLINE_ARIA: dict[str, Any] = {
    "frames": "off",
    "crew": {"backend": "fake"},
    "impostor": {"backend": "fake"},
}
"""Overrides that seat ARIA on the offline fake backend on both sides, frames off: the
offline games several harness tests read (`store.game(seed=s, **OFFLINE_ARIA)`)."""


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock on the file `path` (created if need be) across processes."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class GameStore:
    """Fake-world games under `root`, one folder per configuration, each played once.

    Args:
        root: The folder holding the games (created on first use). Every process
            handed the same root shares its games.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.played: list[Path] = []
        """The games this process played itself (not found ready in the store)."""

    def folder(self, preset: str = "quick", **overrides: Any) -> Path:
        """Where the game of this configuration lives (played or not)."""
        key = json.dumps({"preset": preset, "overrides": overrides}, sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        seed = overrides.get("seed", "default")
        return self.root / f"{preset}-seed{seed}-{digest}"

    def game(self, preset: str = "quick", **overrides: Any) -> Path:
        """The folder of the fake-world game of `preset` with `overrides` (as
        `resolve_config` takes them), played now unless the store already holds it.

        Raises:
            AssertionError: the game did not end `ok`.
        """
        out = self.folder(preset, **overrides)
        if (out / "summary.json").is_file():
            return out
        self.root.mkdir(parents=True, exist_ok=True)
        with _lock(out.with_name(out.name + ".lock")):
            if (out / "summary.json").is_file():
                return out
            config = resolve_config(preset, overrides=overrides)
            private = out.with_name(f"{out.name}.{os.getpid()}.partial")
            shutil.rmtree(private, ignore_errors=True)
            result = play_game(config, load_map(config.map), "fake", private)
            assert result.status == "ok", (out.name, result.reason)
            private.rename(out)
            self.played.append(out)
        return out

    def events(self, preset: str = "quick", **overrides: Any) -> list[Event]:
        """The events of the game `game` returns."""
        return read_events(self.game(preset, **overrides) / "events.jsonl")

    def copy_to(self, dest: Path, preset: str = "quick", **overrides: Any) -> Path:
        """A private copy of a game's folder at `dest`, for a test that writes into it."""
        shutil.copytree(self.game(preset, **overrides), dest)
        return dest


def first_seed(
    store: GameStore,
    holds: Callable[[list[Event]], bool],
    seeds: Iterable[int],
    preset: str = "quick",
    **overrides: Any,
) -> int | None:
    """The first seed whose game holds what `holds` asks, or None: for finding a seed to
    pin when a pinned one no longer plays the scene a test needs."""
    for seed in seeds:
        if holds(store.events(preset, **{**overrides, "seed": seed})):
            return seed
    return None
