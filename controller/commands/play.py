"""`mineamongus play`: play one game and write its event log."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from controller.commands import Command, start_live_viewer

# The game, the worlds and the harness are imported where they are used, so that
# `mineamongus --help` starts without them (tests/controller/test_cli.py).
if TYPE_CHECKING:
    from controller.agents.registry import SideFormat
    from controller.config import GameConfig
    from controller.game import GameResult
    from controller.worlds.base import World
    from world.geometry import ShipGeometry
    from world.spec import MapSpec


def _presets() -> list[str]:
    """The built-in presets (`controller/presets/*.yaml`), without importing the config."""
    folder = resources.files("controller").joinpath("presets")
    return sorted(
        f.name.removesuffix(".yaml") for f in folder.iterdir() if f.name.endswith(".yaml")
    )


def add_parser(sub: Any) -> None:
    """Register `play`."""
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
    p.add_argument(
        "--seat",
        action="append",
        default=[],
        metavar="COLOUR=KIND[:NAME]",
        help="play one seat with another agent kind, repeatable, e.g. --seat red=human "
        "(a person at a page on loopback), --seat red=human:ada (the name the person "
        "plays under, on the ratings board); other args through --config's seats:",
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


def _flag_side(fmt: SideFormat | None, address: str) -> dict[str, Any]:
    """The side `--crew ADDRESS` (or `--agents scripted`) names."""
    if fmt is not None:
        return fmt.flag_side(address)
    if address == "scripted":
        return {"agent": "scripted"}
    from controller.config import ConfigError

    raise ConfigError(f"{address}: no installed harness plays a model backend")


def config_from_args(args: argparse.Namespace) -> GameConfig:
    """Resolve preset, config file and command-line values into one GameConfig.

    The side flags reach the sides' args through the side format a harness registers
    (`controller.agents.registry.SideFormat`; ARIA's in `harness_aria.registration`).
    """
    from controller.agents.registry import PlayFlags, side_format
    from controller.config import ConfigError, load_config_file, resolve_config

    file_data = load_config_file(args.config) if args.config else {}
    fmt = side_format()
    overrides: dict[str, Any] = {}
    if args.preset is not None:
        overrides["preset"] = args.preset
    sides: dict[str, dict[str, Any]] = {"crew": {}, "impostor": {}}
    if args.agents == "scripted":
        sides = {s: _flag_side(fmt, "scripted") for s in sides}
    for side in ("crew", "impostor"):
        address = getattr(args, side)
        if address is not None:
            sides[side] = _flag_side(fmt, address)
    # The flags below change the sides' args once the layers are merged (so that
    # command-line values win), given the kind each side resolved to.
    flags = PlayFlags(
        base_url=args.base_url, text_only=args.text_only, ablations=tuple(args.ablation)
    )
    if flags.given():
        base = resolve_config("quick", file_data, {k: v for k, v in sides.items() if v})
        if fmt is None:
            raise ConfigError(
                "--base-url, --text-only, --ablation: no installed harness takes them"
            )
        resolved = {s: (getattr(base, s).agent, getattr(base, s).args) for s in sides}
        for side, values in fmt.apply_flags(resolved, flags).items():
            sides[side] = {**sides[side], **values}
    for side, values in sides.items():
        if values:
            overrides[side] = values
    for item in args.seat:
        colour, sep, rest = item.partition("=")
        kind, named, name = rest.partition(":")
        if not sep or not colour.strip() or not kind.strip() or (named and not name.strip()):
            raise ConfigError(
                f"--seat {item!r}: write COLOUR=KIND or COLOUR=KIND:NAME, e.g. --seat red=human "
                "or --seat red=human:ada (the name a person plays under)"
            )
        seat: dict[str, Any] = {"agent": kind.strip()}
        if named:
            seat["args"] = {"name": name.strip()}
        overrides.setdefault("seats", {})[colour.strip()] = seat
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


def checked_config(args: argparse.Namespace) -> tuple[GameConfig, MapSpec] | None:
    """The game's configuration and map from `play`'s arguments, with every side's agent
    kind checked; None after printing why not (the caller exits with 2)."""
    from controller.players import check_sides
    from world.spec import load_map

    try:
        config = config_from_args(args)
        spec = load_map(config.map)
        check_sides(config)
    except ValueError as exc:  # ConfigError, MapSpecError, AblationError, AgentKindError
        print(f"mineamongus: {exc}", file=sys.stderr)
        return None
    return config, spec


def out_refused(out: Path) -> bool:
    """Whether `out` already holds something a game may not overwrite (said on stderr)."""
    taken = occupied_by(out)
    if taken is not None:
        print(f"mineamongus: --out {out} {taken}; choose another --out", file=sys.stderr)
    return taken is not None


def print_outcome(result: GameResult, out: Path) -> int:
    """Print the game's outcome line (JSON) and return `play`'s exit code."""
    outcome = {
        "status": result.status,
        "winner": result.winner,
        "ending": result.ending,
        "steps": result.steps,
        "reason": result.reason,
        "out": str(out),
    }
    print(json.dumps(outcome), flush=True)
    return 0 if result.status == "ok" else 1


def run(args: argparse.Namespace) -> int:
    """`mineamongus play`."""
    checked = checked_config(args)
    if checked is None:
        return 2
    config, spec = checked
    out = args.out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{config.seed}"
    if out_refused(out):
        return 2

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _terminate)
    viewer = None
    if args.view:
        # The viewer (a hook the annotation package registers) reads only the run folder
        # from its own thread: the step loop never waits for it (benchmarks/viewer.py
        # measures the difference).
        try:
            viewer = start_live_viewer(out, port=args.view_port)
        except RuntimeError as exc:
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
    return print_outcome(result, out)


COMMAND = Command("play", add_parser, run, position=0)
"""The entry point of `play` (group `mineamongus.commands`)."""
