"""Is the game winnable by both sides? Balance of scripted and offline-ARIA pairings.

Plays, per pairing (crew agents vs impostor agents), one game per seed and prints, from
the event logs alone (`controller.balance`): the impostor win rate with its Wilson 95 %
interval, the endings, kills, meetings and ejections per game, the impostor share of
ejections with a one-sided binomial p against 2/7, and the KILL conversion (kills per
KILL decision, and the deferrals by reason).

Pairings: `scripted/scripted`, `aria/scripted` (offline ARIA crew, the `fake` backend,
against scripted impostors) and `scripted/aria`.

Run from the repository root:
    python -m benchmarks.balance --preset quick|balanced|paper --seeds N [--world fake|minecraft]
        [--pairings scripted/scripted,aria/scripted,scripted/aria] [--first 1] [--workers 2]
        [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from controller.balance import BalanceStats
from controller.cli import play_game
from controller.config import PRESETS, resolve_config
from controller.events import read_events
from world.spec import load_map

PAIRINGS = ("scripted/scripted", "aria/scripted", "scripted/aria")
SIDES: dict[str, dict[str, Any]] = {
    "scripted": {"agent": "scripted"},
    "aria": {"agent": "aria", "args": {"backend": "fake"}},
}


def play_one(pairing: str, preset: str, seed: int, world: str, root: str) -> str:
    """Play one game; return its folder (its log is read by the parent)."""
    crew, impostor = pairing.split("/")
    config = resolve_config(
        preset,
        overrides={
            "seed": seed,
            "frames": "off",
            "crew": SIDES[crew],
            "impostor": SIDES[impostor],
        },
    )
    out = Path(root) / pairing.replace("/", "-") / f"seed{seed}"
    play_game(config, load_map(config.map), world, out)
    return str(out)


def run(
    pairings: list[str], preset: str, seeds: list[int], world: str, root: Path, workers: int
) -> dict[str, BalanceStats]:
    """Play every (pairing, seed) and count each pairing's games."""
    stats = {p: BalanceStats() for p in pairings}
    jobs = [(p, s) for p in pairings for s in seeds]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(play_one, p, preset, s, world, str(root)): (p, s) for p, s in jobs}
        for i, (future, (p, s)) in enumerate(futures.items(), 1):
            out = Path(future.result())
            events = read_events(out / "events.jsonl")
            stats[p].add(events)
            end = events[-1]
            print(f"[{i}/{len(jobs)}] {p} seed {s}: {getattr(end, 'ending', '?')}", file=sys.stderr)
    return stats


def main(argv: list[str] | None = None) -> int:
    """Play the pairings and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick", choices=list(PRESETS))
    parser.add_argument("--seeds", type=int, default=40, help="games per pairing (default 40)")
    parser.add_argument("--first", type=int, default=1, help="first seed (default 1)")
    parser.add_argument("--world", default="fake", choices=["fake", "minecraft"])
    parser.add_argument(
        "--pairings",
        default=",".join(PAIRINGS),
        help="comma-separated crew/impostor pairings (default: all three)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="games played at once (default 2; the real server needs about a core each)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs in this folder")
    args = parser.parse_args(argv)
    pairings = [p.strip() for p in args.pairings.split(",") if p.strip()]
    for p in pairings:
        parts = p.split("/")
        if len(parts) != 2 or any(x not in SIDES for x in parts):
            parser.error(f"--pairings: {p!r} is not CREW/IMPOSTOR with each scripted or aria")
    seeds = list(range(args.first, args.first + args.seeds))
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        stats = run(pairings, args.preset, seeds, args.world, root, max(1, args.workers))
    print(f"preset {args.preset}, world {args.world}, seeds {seeds[0]}-{seeds[-1]}")
    for p in pairings:
        crew, impostor = p.split("/")
        print(f"\n== crew {crew} vs impostors {impostor}")
        for line in stats[p].lines():
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
