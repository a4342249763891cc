"""Does the simulation speed change the game? Paired seeds at `server.speed` max and 1.

Plays the same scripted games (crew and impostors scripted, one game per seed) on the
embedded server once at `max` and once at real time (`1`), checks every record with
`controller.logcheck`, and prints per speed the impostor win rate (Wilson 95 %), kills
and meetings per game (mean with a t 95 % interval), then the paired differences
(max − 1) with their 95 % intervals and whether the two speeds' intervals overlap.

Run from the repository root (about 4 minutes a game at speed 1, under 1 at max):
    python -m benchmarks.speed_outcomes --seeds 30 [--first 1] [--preset quick]
        [--workers 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from scipy import stats as scipy_stats

from controller.cli import play_game
from controller.config import PRESETS, resolve_config
from controller.events import GameEnd, Kill, MeetingStart, read_events
from controller.logcheck import log_violations
from controller.stats import wilson
from world.spec import load_map

SPEEDS = ("max", "1")


@dataclass
class Game:
    """What one game's record says."""

    seed: int
    speed: str
    ok: bool
    impostor_won: bool = False
    kills: int = 0
    meetings: int = 0
    violations: list[str] = field(default_factory=list)


def play_one(preset: str, seed: int, speed: str, root: str) -> Game:
    """Play one scripted game at `speed` and read its record."""
    config = resolve_config(
        preset,
        overrides={
            "seed": seed,
            "frames": "off",
            "crew": {"agent": "scripted"},
            "impostor": {"agent": "scripted"},
            "server": {"speed": speed if speed == "max" else int(speed)},
        },
    )
    out = Path(root) / f"speed-{speed}" / f"seed{seed}"
    play_game(config, load_map(config.map), "minecraft", out)
    events = read_events(out / "events.jsonl")
    end = next((e for e in events if isinstance(e, GameEnd)), None)
    game = Game(seed=seed, speed=speed, ok=end is not None and end.status == "ok")
    game.violations = log_violations(events)
    if end is not None and game.ok:
        game.impostor_won = end.winner == "impostors"
        game.kills = sum(isinstance(e, Kill) for e in events)
        game.meetings = sum(isinstance(e, MeetingStart) for e in events)
    return game


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its t 95 % interval (the interval collapses for fewer than 2 values)."""
    if not values:
        return math.nan, math.nan, math.nan
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, m, m
    half = (
        scipy_stats.t.ppf(0.975, len(values) - 1)
        * statistics.stdev(values)
        / math.sqrt(len(values))
    )
    return m, m - half, m + half


def overlap(a: tuple[float, float, float], b: tuple[float, float, float]) -> str:
    """`overlap` when two intervals share a point, else `apart`."""
    return "overlap" if a[1] <= b[2] and b[1] <= a[2] else "apart"


def report(games: list[Game]) -> list[str]:
    """The printable comparison of the two speeds."""
    by = {s: {g.seed: g for g in games if g.speed == s} for s in SPEEDS}
    out: list[str] = []
    figures: dict[str, dict[str, tuple[float, float, float]]] = {}
    for speed in SPEEDS:
        ok = [g for g in by[speed].values() if g.ok]
        w = wilson(sum(g.impostor_won for g in ok), len(ok))
        rate = (w.rate or 0.0, w.low or 0.0, w.high or 0.0)
        figures[speed] = {
            "impostor win rate": rate,
            "kills per game": mean_interval([float(g.kills) for g in ok]),
            "meetings per game": mean_interval([float(g.meetings) for g in ok]),
        }
        bad = sum(bool(g.violations) for g in by[speed].values())
        out.append(
            f"speed {speed}: {len(ok)} games ok of {len(by[speed])}; logcheck: "
            f"{bad} records with violations"
        )
        for name, (m, lo, hi) in figures[speed].items():
            out.append(f"  {name}: {m:.2f} [{lo:.2f}, {hi:.2f}]")
        for g in sorted(by[speed].values(), key=lambda g: g.seed):
            out += [f"  seed {g.seed}: {v}" for v in g.violations[:3]]
    paired = [s for s in by["max"] if s in by["1"] and by["max"][s].ok and by["1"][s].ok]
    out.append(f"paired seeds (both ok): {len(paired)}")
    same = sum(by["max"][s].impostor_won == by["1"][s].impostor_won for s in paired)
    out.append(f"  same winner at both speeds: {same}/{len(paired)}")
    for name, attr in (
        ("impostor win", "impostor_won"),
        ("kills", "kills"),
        ("meetings", "meetings"),
    ):
        diffs = [
            float(getattr(by["max"][s], attr)) - float(getattr(by["1"][s], attr)) for s in paired
        ]
        m, lo, hi = mean_interval(diffs)
        out.append(f"  paired difference max - 1, {name}: {m:+.2f} [{lo:+.2f}, {hi:+.2f}]")
    for name in figures["max"]:
        out.append(f"  {name}: intervals {overlap(figures['max'][name], figures['1'][name])}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Play the seeds at both speeds and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick", choices=list(PRESETS))
    parser.add_argument("--seeds", type=int, default=30, help="paired seeds (default 30)")
    parser.add_argument("--first", type=int, default=1, help="first seed (default 1)")
    parser.add_argument("--workers", type=int, default=2, help="games at once (default 2)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs in this folder")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds: give at least 1")
    seeds = list(range(args.first, args.first + args.seeds))
    jobs = [(seed, speed) for seed in seeds for speed in SPEEDS]
    games: list[Game] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = str(args.keep or tmp)
        with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
            futures = [pool.submit(play_one, args.preset, s, v, root) for s, v in jobs]
            for i, future in enumerate(futures, 1):
                g = future.result()
                games.append(g)
                state = "impostors" if g.impostor_won else "crew"
                print(
                    f"[{i}/{len(jobs)}] seed {g.seed} speed {g.speed}: "
                    f"{state if g.ok else 'not ok'}, {g.kills} kills, {g.meetings} meetings, "
                    f"{len(g.violations)} logcheck violations",
                    file=sys.stderr,
                    flush=True,
                )
    print(
        f"preset {args.preset}, embedded server, scripted vs scripted, seeds {seeds[0]}-{seeds[-1]}"
    )
    for line in report(games):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
