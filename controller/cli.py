"""The `mineamongus` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from controller.commands import discover

# Everything else is imported where it is used, so that `mineamongus --help`, `view`,
# `collect` and the rest start without loading the game, the harness and its provider
# SDKs (seconds of imports; tests/controller/test_cli.py holds `--help` under 1 s).
if TYPE_CHECKING:
    from controller.config import GameConfig
    from controller.game import GameResult
    from controller.worlds.base import World
    from world.geometry import ShipGeometry
    from world.spec import MapSpec

log = logging.getLogger("mineamongus")


def _presets() -> list[str]:
    """The built-in presets (`controller/presets/*.yaml`), without importing the config."""
    folder = resources.files("controller").joinpath("presets")
    return sorted(
        f.name.removesuffix(".yaml") for f in folder.iterdir() if f.name.endswith(".yaml")
    )


def load_harness() -> None:
    """Register the `aria` agent kind (the harness and, through it, the provider SDKs).

    The CLI is where the harness meets the controller: the controller's own modules
    never import it. The `mineamongus.agents` entry point does the same for an
    installed package; this covers a checkout run with `python -m controller.cli`.
    """
    import harness_aria.registration  # noqa: F401


def _play_parser(sub: Any) -> None:
    p = sub.add_parser("play", help="play one game and write its event log")
    p.add_argument(
        "--preset",
        choices=_presets(),
        default=None,
        help="timing preset (default: quick, or the config file's)",
    )
    p.add_argument(
        "--agents",
        choices=["scripted"],
        default=None,
        help="shortcut: both sides scripted (the default)",
    )
    p.add_argument(
        "--crew",
        default=None,
        metavar="BACKEND",
        help="crewmates: scripted, fake, openai:MODEL, anthropic:MODEL, openai-compatible:MODEL",
    )
    p.add_argument("--impostor", default=None, metavar="BACKEND", help="impostors: as --crew")
    p.add_argument(
        "--base-url",
        default=None,
        help="endpoint for openai-compatible backends (e.g. http://127.0.0.1:8000/v1)",
    )
    p.add_argument(
        "--ablation",
        action="append",
        default=[],
        metavar="SIDE.FIELD=VALUE",
        help="ARIA spec setting, repeatable, e.g. crew.memory=semantic impostor.planning="
        "hierarchical both.state=ego",
    )
    p.add_argument(
        "--text-only",
        nargs="?",
        const="both",
        default=None,
        choices=["crew", "impostor", "both"],
        help="send no images to the models of a side (crew, impostor; alone: both)",
    )
    p.add_argument("--seed", type=int, default=None, help="game seed (default 0)")
    p.add_argument(
        "--out", type=Path, default=None, help="output folder (default runs/<time>-seed<N>)"
    )
    p.add_argument("--max-steps", type=int, default=None, help="step budget")
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        help="YAML file with any GameConfig fields (command-line values win)",
    )
    p.add_argument(
        "--server",
        default=None,
        metavar="HOST:PORT",
        help="use an external Minecraft server instead of the embedded one",
    )
    p.add_argument("--map", default=None, help="map name or YAML path (default skeld)")
    p.add_argument(
        "--frames",
        choices=["off", "jpg", "png"],
        default=None,
        help="save first-person frames each step (default jpg; off renders none)",
    )
    p.add_argument(
        "--world",
        choices=["minecraft", "fake"],
        default="minecraft",
        help="'fake' plays in the in-process simulated world (no Minecraft)",
    )
    p.add_argument("--quiet", action="store_true", help="no per-step progress")
    p.add_argument(
        "--view",
        action="store_true",
        help="serve the game viewer on loopback while the game is played (prints its address)",
    )
    p.add_argument(
        "--view-port", type=int, default=None, help="port of --view (default: a free one)"
    )


def _replay_parser(sub: Any) -> None:
    p = sub.add_parser("replay", help="videos of a played game from its folder")
    p.add_argument("run", type=Path, help="the folder a game wrote (--out of play)")


def cmd_replay(args: argparse.Namespace) -> int:
    """`mineamongus replay DIR`."""
    from controller.replay import ReplayError, replay

    try:
        made = replay(args.run, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except ReplayError as exc:
        print(f"mineamongus: {exc}", file=sys.stderr)
        return 2
    for name, path in made.items():
        print(f"{name}: {path}")
    return 0


class _Version(argparse.Action):
    """`--version`: the package version and the source revision it runs from."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("nargs", 0)
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from controller.versions import version_line

        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `mineamongus`."""
    parser = argparse.ArgumentParser(
        prog="mineamongus",
        description="Among Us in Minecraft for vision-language-model agents.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument(
        "--version", action=_Version, help="print the version and source revision, then exit"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _play_parser(sub)
    _replay_parser(sub)
    for command in discover():
        command.add_parser(sub)
    return parser


def config_from_args(args: argparse.Namespace) -> GameConfig:
    """Resolve preset, config file and command-line values into one GameConfig."""
    load_harness()
    from controller.config import ConfigError, load_config_file, resolve_config
    from harness_aria.spec import AblationError, AriaSpec, apply_ablations

    file_data = load_config_file(args.config) if args.config else {}
    overrides: dict[str, Any] = {}
    if args.preset is not None:
        overrides["preset"] = args.preset
    sides: dict[str, dict[str, Any]] = {"crew": {}, "impostor": {}}
    if args.agents == "scripted":
        sides = {"crew": {"backend": "scripted"}, "impostor": {"backend": "scripted"}}
    for side in ("crew", "impostor"):
        backend = getattr(args, side)
        if backend is not None:
            sides[side]["backend"] = backend
    # The side fields below use the older flat form, which the config translates into
    # the `aria` kind's args after the layers are merged (so command-line values win).
    base = resolve_config("quick", file_data, {k: v for k, v in sides.items() if v})
    aria = {s for s in ("crew", "impostor") if getattr(base, s).agent == "aria"}
    # `--text-only` alone (both) applies to every side that plays a model, as it always
    # did; naming a side that plays none is an error.
    text_only = {"both": aria, None: set()}.get(args.text_only, {args.text_only})
    if args.text_only is not None and not text_only:
        raise ConfigError(f"--text-only {args.text_only}: no side plays a model")
    for side in text_only:
        if side not in aria:
            raise ConfigError(f"--text-only {args.text_only}: the {side} side plays no model")
        sides[side]["text_only"] = True
    for side in aria:
        if args.base_url is not None:
            sides[side]["base_url"] = args.base_url
    specs = {
        s: AriaSpec.model_validate(getattr(base, s).args["spec"]) if s in aria else AriaSpec()
        for s in ("crew", "impostor")
    }
    crew_spec, impostor_spec = apply_ablations(specs["crew"], specs["impostor"], args.ablation)
    for side, spec in (("crew", crew_spec), ("impostor", impostor_spec)):
        if side in aria:
            sides[side]["spec"] = spec.model_dump()
        elif spec != specs[side]:
            raise AblationError(f"--ablation: the {side} side plays no model (it is scripted)")
    for side, values in sides.items():
        if values:
            overrides[side] = values
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.map is not None:
        overrides["map"] = args.map
    if args.max_steps is not None:
        overrides["rules"] = {"max_steps": args.max_steps}
    if args.frames is not None:
        overrides["frames"] = args.frames
    if args.server is not None:
        overrides["server"] = {"external": args.server}
    config = resolve_config("quick", file_data, overrides)
    config.server.external_address()
    return config


def make_world(kind: str, config: GameConfig, geometry: ShipGeometry, out: Path) -> World:
    """The world to play in."""
    if kind == "fake":
        from controller.worlds.fake import FakeWorld

        return FakeWorld(geometry)
    from controller.worlds.minecraft import MinecraftWorld

    return MinecraftWorld(
        config.server, out / "logs", geometry.seat_pos(0), frames=config.frames != "off"
    )


def play_game(
    config: GameConfig, spec: MapSpec, world_kind: str, out: Path, progress: Any = None
) -> GameResult:
    """Set up the world and agents, play one game, and always close the world."""
    load_harness()
    from controller.game import Game
    from controller.players import agent_factory
    from world.geometry import ShipGeometry

    geometry = ShipGeometry(spec)
    agents = agent_factory(config, geometry, out)
    world = make_world(world_kind, config, geometry, out)
    try:
        game = Game(config, spec, world, agents, out, progress=progress)
        return game.run()
    finally:
        world.close()


def occupied_by(out: Path) -> str | None:
    """Why a game must not write into `out`, or None when it may.

    A game never appends to a record, and a folder holding a study or other runs is
    refused too: `annotate`, `analyze` and `collect` read every record under a folder,
    so a stray game there would be counted with (or instead of) the study's games.
    The tournament's own game folders hold only `game-config.yaml` and `play.log` when
    their game starts.
    """
    from controller.tournament.manifest import MANIFEST

    if not out.exists():
        return None
    if not out.is_dir():
        return "is not a folder"
    if (out / MANIFEST).is_file():
        return f"holds a study ({MANIFEST})"
    for root, _dirs, files in os.walk(out):
        for name in ("events.jsonl", "summary.json"):
            if name in files:
                where = Path(root) / name
                return f"already holds a run ({where})"
    return None


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def cmd_play(args: argparse.Namespace) -> int:
    """`mineamongus play`."""
    from controller.players import check_sides
    from world.spec import load_map

    try:
        config = config_from_args(args)
        spec = load_map(config.map)
        check_sides(config)
    except ValueError as exc:  # ConfigError, MapSpecError, AblationError, AgentKindError
        print(f"mineamongus: {exc}", file=sys.stderr)
        return 2
    out = args.out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{config.seed}"
    taken = occupied_by(out)
    if taken is not None:
        print(f"mineamongus: --out {out} {taken}; choose another --out", file=sys.stderr)
        return 2

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _terminate)
    viewer = None
    if args.view:
        # The viewer reads only the run folder from its own thread: the step loop never
        # waits for it (benchmarks/viewer.py measures the difference).
        from annotation.viewer.server import ViewerError, start_background

        try:
            viewer = start_background(out, port=args.view_port)
        except ViewerError as exc:
            print(f"mineamongus: {exc}", file=sys.stderr)
            return 2
        print(f"viewer: {viewer.url}", file=sys.stderr, flush=True)
    try:
        result = play_game(config, spec, args.world, out, progress)
    except KeyboardInterrupt:
        print(f"mineamongus: interrupted; the partial record is in {out}", file=sys.stderr)
        return 130
    finally:
        if viewer is not None:
            viewer.stop()
            print(f"viewer stopped; replay with: mineamongus view {out}", file=sys.stderr)
    outcome = {
        "status": result.status,
        "winner": result.winner,
        "ending": result.ending,
        "steps": result.steps,
        "reason": result.reason,
        "out": str(out),
    }
    print(json.dumps(outcome))
    return 0 if result.status == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `mineamongus` command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "play":
        return cmd_play(args)
    if args.command == "replay":
        return cmd_replay(args)
    for command in discover():
        if command.name == args.command:
            return command.run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
