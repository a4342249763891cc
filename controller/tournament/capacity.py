"""What this machine can hold: cores and memory per game."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from controller.tournament.manifest import Manifest


@dataclass(frozen=True)
class Capacity:
    """How many games this machine can run at once, and why."""

    cores: int
    available_gb: float
    memory_per_game_gb: float
    measured: bool
    """Whether `memory_per_game_gb` is a measured peak (else the spec's default)."""
    cpus_per_game: float
    games: int
    """min(cores / cpus per game, available memory / memory per game), at least 1."""


def measured_peak_gb(manifest: Manifest) -> float | None:
    """The largest peak RSS of any finished game's process tree, in GB."""
    peaks = [a.peak_rss_mb for e in manifest.games.values() for a in e.attempts if a.peak_rss_mb]
    return max(peaks) / 1024 if peaks else None


def machine_capacity(
    manifest: Manifest | None, cpus_per_game: float, default_memory_gb: float
) -> Capacity:
    """Cores (this process's CPU affinity) and available memory over what a game needs."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    available = psutil.virtual_memory().available / 2**30
    peak = measured_peak_gb(manifest) if manifest is not None else None
    per_game = peak if peak is not None else default_memory_gb
    games = max(1, min(int(cores // cpus_per_game), int(available // max(per_game, 1e-3))))
    return Capacity(
        cores=cores,
        available_gb=round(available, 1),
        memory_per_game_gb=round(per_game, 2),
        measured=peak is not None,
        cpus_per_game=cpus_per_game,
        games=games,
    )
