"""`mineamongus tournament`: run a study of many games that resumes, runs in parallel
and scales out on Ray."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.commands import Command, start_live_viewer

if TYPE_CHECKING:
    from controller.tournament.executors import Executor
    from controller.tournament.manifest import Manifest
    from controller.tournament.runner import RunOptions
    from controller.tournament.spec import Arm, ExperimentSpec

# The runner's modules (rich, psutil, pyarrow) are imported when the command runs, not
# when `mineamongus` builds its parser, so that `play` (one per game) starts no slower.

NAME = "tournament"

log = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> None:
    """Register `tournament`."""
    p = subparsers.add_parser(
        NAME,
        help="run a study (arms x paired seeds); the same command resumes it",
        description="Run every game of an experiment spec, resumably. TARGET is a spec "
        "YAML (with --out DIR) or a study folder (resumes it with its saved spec).",
    )
    p.add_argument("target", type=Path, metavar="SPEC|DIR", help="experiment spec or study folder")
    p.add_argument("--out", type=Path, default=None, help="study folder (records and manifest)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print arms, games, tokens and cost (with --backend ray --ray-address: the "
        "games the cluster runs at once); run nothing",
    )
    p.add_argument(
        "--status", action="store_true", help="per-arm progress and impostor win rate so far"
    )
    p.add_argument("--workers", type=int, default=None, help="games at once (spec: runner.workers)")
    p.add_argument(
        "--retries",
        type=int,
        default=None,
        help="reruns of an invalid or failed game with the same seed (spec: runner.retries)",
    )
    p.add_argument(
        "--max-cost",
        type=float,
        default=None,
        metavar="USD",
        help="start no new game once the measured spend would pass this",
    )
    p.add_argument(
        "--extend", action="store_true", help="add the spec's new arms or seeds to the study"
    )
    p.add_argument(
        "--game-timeout",
        type=float,
        default=None,
        metavar="S",
        help="wall-clock limit of one game (spec: runner.game_timeout_s)",
    )
    p.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="local child processes, or Ray tasks (pip install 'mineamongus[ray]')",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to join (e.g. ray://head:10001 or auto); default starts a local one",
    )
    p.add_argument("--plain", action="store_true", help="plain progress lines even on a terminal")
    p.add_argument(
        "--cold-workers",
        action="store_true",
        help="a new process, server and bots for every game instead of warm workers "
        "(spec: runner.warm: false)",
    )
    p.add_argument(
        "--view",
        action="store_true",
        help="serve the study viewer on loopback while the study runs: every game, "
        "each watchable live (prints its address)",
    )
    p.add_argument(
        "--view-port", type=int, default=None, help="port of --view (default: a free one)"
    )


def _err(msg: str) -> int:
    print(f"mineamongus tournament: {msg}", file=sys.stderr)
    return 2


def dry_run(spec_path: Path, ray_address: str | None = None, cold: bool = False) -> int:
    """Print arms, games and the token and cost estimate (and, given a Ray cluster's
    address, how many games it runs at once)."""
    from controller.tournament.estimate import dry_run_lines
    from controller.tournament.spec import expand_arms, load_spec

    spec = load_spec(spec_path)
    arms = expand_arms(spec)
    seeds = spec.seed_list()
    print(
        f"study {spec.name}: {len(arms)} arm(s) x {len(seeds)} paired seed(s) = "
        f"{len(arms) * len(seeds)} games on the {spec.world} world"
    )
    warm = spec.runner.warm and not cold and ray_address is None
    for line in dry_run_lines(spec, arms, len(seeds), warm=warm):
        print(line)
    if ray_address is not None:
        from controller.tournament.capacity import cluster_capacity, format_cluster
        from controller.tournament.ray_backend import cluster_nodes

        r = spec.runner
        try:
            nodes = cluster_nodes(ray_address)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            return _err(f"--ray-address {ray_address}: {exc}")
        cap = cluster_capacity(nodes, r.cpus_per_game, r.memory_gb_per_game)
        for line in format_cluster(cap, ray_address, spec.world):
            print(line)
    return 0


def status(out: Path) -> int:
    """Print the per-arm table of a study folder."""
    from controller.tournament.manifest import read_manifest
    from controller.tournament.stats import arm_status, format_status

    manifest = read_manifest(out)
    if manifest is None:
        return _err(f"{out}: no manifest.json; is it a study folder (--out of tournament)?")
    print(format_status(arm_status(out, manifest)))
    c = manifest.counts()
    print(
        f"total: {c['done']} done, {c['running']} running, {c['pending']} pending, "
        f"{c['invalid']} invalid, {c['failed']} failed; spent ${manifest.spent_usd():.2f}"
    )
    if manifest.paused:
        print(f"paused: {manifest.paused}")
    if manifest.stopped:
        print(f"stopped: {manifest.stopped}")
    return 0


def _executor(
    args: argparse.Namespace,
    workers: int,
    cpus: float,
    memory_gb: float,
    out: Path,
    warm: bool = True,
) -> Executor:
    if args.backend == "ray":
        try:
            from controller.tournament.ray_backend import RayExecutor
        except ImportError as exc:
            raise ImportError(f"{exc}; install it with pip install 'mineamongus[ray]'") from exc

        return RayExecutor(
            out,
            address=args.ray_address,
            slots=args.workers,
            cpus_per_game=cpus,
            memory_gb=memory_gb,
        )
    from controller.tournament.executors import LocalExecutor

    return LocalExecutor(workers, warm=warm)


def run(args: argparse.Namespace) -> int:
    """`mineamongus tournament`."""
    from controller.tournament.manifest import ManifestError
    from controller.tournament.runner import RunOptions, open_study, study_spec
    from controller.tournament.spec import SpecError

    target: Path = args.target
    try:
        if args.status:
            return status(args.out or target)
        if target.is_dir():
            if args.out is not None and args.out.resolve() != target.resolve():
                return _err("give either a study folder or SPEC --out DIR, not both")
            spec_path, out = study_spec(target), target
        else:
            spec_path, out = target, args.out
        if args.dry_run:
            return dry_run(
                spec_path,
                args.ray_address if args.backend == "ray" else None,
                cold=args.cold_workers or args.backend == "ray",
            )
        if out is None:
            return _err("--out DIR is required to run a spec (or use --dry-run)")
        spec, arms, manifest, notes = open_study(spec_path, out, args.extend)
    except (SpecError, ManifestError) as exc:
        return _err(str(exc))
    r = spec.runner
    try:
        options = RunOptions(
            workers=args.workers if args.workers is not None else r.workers,
            retries=args.retries if args.retries is not None else r.retries,
            game_timeout_s=(
                args.game_timeout if args.game_timeout is not None else r.game_timeout_s
            ),
            max_cost_usd=args.max_cost,
            extend=args.extend,
        )
    except ValueError as exc:
        return _err(str(exc))
    try:
        warm = r.warm and not args.cold_workers
        executor = _executor(
            args, options.workers, r.cpus_per_game, r.memory_gb_per_game, out, warm
        )
    except (ImportError, RuntimeError, ValueError) as exc:
        return _err(f"--backend {args.backend}: {exc}")
    viewer = None
    if args.view:
        # The viewer (a hook the annotation package registers) runs in this process, the
        # games in their own: it reads their folders only.
        try:
            viewer = start_live_viewer(out, port=args.view_port)
        except RuntimeError as exc:
            return _err(f"--view: {exc}")
        notes = [f"viewer: {viewer.url}", *notes]
    try:
        return _run_study(args, out, spec, arms, manifest, notes, options, executor)
    finally:
        if viewer is not None:
            viewer.stop()
            print(f"viewer stopped; replay with: mineamongus view {out}", file=sys.stderr)


def _run_study(
    args: argparse.Namespace,
    out: Path,
    spec: ExperimentSpec,
    arms: list[Arm],
    manifest: Manifest,
    notes: list[str],
    options: RunOptions,
    executor: Executor,
) -> int:
    """Run the study's pending games with progress shown; print the result line."""
    from controller.tournament.capacity import machine_capacity
    from controller.tournament.display import study_progress
    from controller.tournament.estimate import arm_estimate
    from controller.tournament.runner import Runner
    from controller.tournament.stats import arm_status, format_status

    r = spec.runner
    warm = bool(getattr(executor, "warm", False))
    with study_progress(
        spec, arms, executor.slots, out, live=False if args.plain else None, warm=warm
    ) as progress:
        for line in notes:
            progress.note(line)
        if options.max_cost_usd is not None:
            unpriced = sorted(
                {b for a in arms for b in arm_estimate(a, 1, spec.estimate).unknown_prices}
            )
            if unpriced:
                progress.note(
                    f"warning: no price for {', '.join(unpriced)}: their games record $0 spent, "
                    "so --max-cost cannot limit them; add their prices to the sides' "
                    "settings.prices"
                )
        if args.backend == "local":
            cap = machine_capacity(manifest, r.cpus_per_game, r.memory_gb_per_game)
            if options.workers > cap.games:
                what = "measured peak" if cap.measured else "assumed (runner.memory_gb_per_game)"
                progress.note(
                    f"warning: --workers {options.workers} exceeds what this machine holds: "
                    f"{cap.cores} core(s) / {cap.cpus_per_game:g} per game, "
                    f"{cap.available_gb:g} GB free / {cap.memory_per_game_gb:g} GB per game "
                    f"({what}) -> {cap.games} game(s) at once; games will slow each other down"
                )
        runner = Runner(
            out,
            spec,
            arms,
            manifest,
            executor,
            options,
            on_change=progress.update,
            notify=progress.note,
        )
        result = runner.run()
        progress.update(runner.manifest, 0)
    # The study ends with its results, as `--status` prints them, and the tables written.
    print(format_status(arm_status(out, runner.manifest)))
    if result.tables is not None:
        t = result.tables
        print(f"results: {t.games} ({t.n_games} row(s)), {t.seats} ({t.n_seats} row(s))")
    print(
        f"mineamongus tournament: {result.message}; {result.counts['done']} done, "
        f"{result.counts['invalid']} invalid, {result.counts['failed']} failed, "
        f"{result.counts['pending']} pending; spent ${result.spent_usd:.2f}",
        file=sys.stderr,
    )
    return result.exit_code


COMMAND = Command(NAME, add_parser, run)
"""The entry point of `tournament` (group `mineamongus.commands`)."""
