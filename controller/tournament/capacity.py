"""What this machine can hold: cores and memory per game."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

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


REAL_GAME_PEAK_GB = 1.6
"""Peak RSS of one real-server game's process tree (python controller, node server and
bots, Xvfb), measured by the runner on the quick preset with frames on."""


@dataclass(frozen=True)
class NodeCapacity:
    """Games one Ray node holds, from the resources it offers."""

    node: str
    """Node address and the start of its id."""
    cpus: float
    memory_gb: float
    """Ray's schedulable `memory` of the node."""
    games: int
    """min(CPUs / CPUs per game, memory / memory per game): what Ray places at once."""
    bound: str
    """`cpu` or `memory`: which resource limits it."""


@dataclass(frozen=True)
class ClusterCapacity:
    """How many games a Ray cluster runs at once given each game's declared resources."""

    nodes: list[NodeCapacity]
    cpus_per_game: float
    memory_gb_per_game: float
    games: int
    """Sum over the alive nodes (0: no node can hold one game)."""


def cluster_capacity(
    nodes: list[dict[str, Any]], cpus_per_game: float, memory_gb_per_game: float
) -> ClusterCapacity:
    """Games at once on a cluster, from `ray.nodes()` (alive nodes only).

    Ray places a game task on a node only when the node has both its `num_cpus` and its
    `memory` free, so each node holds the smaller of the two quotients.
    """
    out = []
    for n in nodes:
        if not n.get("Alive", False):
            continue
        res = n.get("Resources", {})
        cpus = float(res.get("CPU", 0.0))
        mem = float(res.get("memory", 0.0)) / 2**30
        by_cpu = int(cpus // cpus_per_game + 1e-9)
        by_mem = int(mem // memory_gb_per_game + 1e-9)
        name = f"{n.get('NodeManagerAddress', '?')} ({str(n.get('NodeID', ''))[:8]})"
        out.append(
            NodeCapacity(
                node=name,
                cpus=cpus,
                memory_gb=round(mem, 1),
                games=min(by_cpu, by_mem),
                bound="cpu" if by_cpu <= by_mem else "memory",
            )
        )
    return ClusterCapacity(out, cpus_per_game, memory_gb_per_game, sum(n.games for n in out))


def format_cluster(cap: ClusterCapacity, address: str, world: str) -> list[str]:
    """The dry-run's lines about a cluster's capacity."""
    cpus = sum(n.cpus for n in cap.nodes)
    mem = sum(n.memory_gb for n in cap.nodes)
    lines = [
        f"cluster {address}: {len(cap.nodes)} node(s), {cpus:g} CPU(s), {mem:.1f} GB of Ray memory"
    ]
    for n in cap.nodes:
        lines.append(
            f"  node {n.node}: {n.cpus:g} CPU(s), {n.memory_gb:g} GB -> {n.games} game(s) "
            f"({n.bound}-bound)"
        )
    lines.append(
        f"games at once: {cap.games} (each game declares {cap.cpus_per_game:g} CPU(s) and "
        f"{cap.memory_gb_per_game:g} GB: runner.cpus_per_game, runner.memory_gb_per_game)"
    )
    if cap.games == 0:
        lines.append("warning: no node can hold one game; Ray would queue every task forever")
    if world == "minecraft" and cap.memory_gb_per_game < REAL_GAME_PEAK_GB:
        lines.append(
            f"warning: a real game peaks at {REAL_GAME_PEAK_GB:g} GB (measured); declaring "
            f"{cap.memory_gb_per_game:g} GB lets Ray place more games on a node than its "
            f"memory holds (set runner.memory_gb_per_game: {REAL_GAME_PEAK_GB:g})"
        )
    return lines
