"""`mineamongus.play`: one game from a configuration, with the configured or given agents.

A thin entry over `controller.game.Game`: the configuration is resolved as the CLI
resolves it (preset, then a file or mapping, then keyword overrides), the world is the
embedded Minecraft server or the in-process fake, and the record is the same
`events.jsonl` and `summary.json` as `mineamongus play` writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from controller.agents.base import Agent
from controller.config import GameConfig, load_config_file, resolve_config
from controller.events import Role
from controller.game import Game, GameResult
from controller.record import LOG_FILE, SUMMARY_FILE
from controller.worlds.base import World
from world.geometry import ShipGeometry
from world.spec import MapSpec, load_map

WorldKind = Literal["minecraft", "fake"]
"""Where a game is played: the embedded (or an external) Minecraft server, or the
in-process fake world (no Minecraft, synthetic pictures; for quick checks and tests)."""

ConfigLike = GameConfig | Mapping[str, Any] | str | Path | None
"""A resolved `GameConfig`, a mapping nested like it, a YAML file's path, or None (the
`quick` preset)."""

Agents = Mapping[str, Agent] | Callable[[str, Role], Agent]
"""One agent per seat, or a factory `(seat, role) -> agent` called once roles are drawn."""

Progress = Callable[[str], None]


def load_harness() -> None:
    """Register the `aria` agent kind, as the CLI does (a checkout run without the
    package's entry points installed still finds it)."""
    import harness_aria.registration  # noqa: F401


def load_config(config: ConfigLike = None, **overrides: Any) -> GameConfig:
    """Resolve a configuration as `mineamongus play --config` does.

    Args:
        config: A `GameConfig` (used as it is, overrides applied on top), a mapping of
            fields nested like `GameConfig`, a YAML file's path, or None.
        **overrides: Fields that win over `config` (nested mappings merge), e.g.
            `seed=3`, `frames="off"`, `rules={"max_steps": 20}`.

    Raises:
        ConfigError: A bad value; the message names the field.
    """
    load_harness()
    if isinstance(config, GameConfig):
        if not overrides:
            return config
        data: dict[str, Any] = config.model_dump(mode="json")
    elif isinstance(config, str | Path):
        data = load_config_file(config)
    else:
        data = dict(config or {})
    return resolve_config("quick", data, overrides)


def open_world(kind: WorldKind, config: GameConfig, geometry: ShipGeometry, out: Path) -> World:
    """The world to play a game in (not started yet; the caller closes it).

    Args:
        kind: `minecraft` or `fake`.
        config: The game's configuration (server settings, frames).
        geometry: The map.
        out: The run folder (the Minecraft world logs to `out/logs/`).
    """
    if kind == "fake":
        from controller.worlds.fake import FakeWorld

        return FakeWorld(geometry)
    if kind != "minecraft":
        raise ValueError(f"world={kind!r} is unknown; choose 'minecraft' or 'fake'")
    from controller.worlds.minecraft import MinecraftWorld

    return MinecraftWorld(
        config.server, out / "logs", geometry.seat_pos(0), frames=config.frames != "off"
    )


def fresh_folder(out: str | Path | None, seed: int) -> Path:
    """The run folder for one game: `out`, or `runs/<time>-seed<N>` when None.

    Raises:
        FileExistsError: The folder already holds a game's record (a game never
            appends to another game's log).
    """
    path = (
        Path(out)
        if out is not None
        else Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{seed}"
    )
    for name in (LOG_FILE, SUMMARY_FILE):
        if (path / name).exists():
            raise FileExistsError(f"{path} already holds a run ({path / name}); choose another")
    return path


def play(
    config: ConfigLike = None,
    *,
    agents: Agents | None = None,
    world: WorldKind = "minecraft",
    out: str | Path | None = None,
    progress: Progress | None = None,
    spec: MapSpec | None = None,
    **overrides: Any,
) -> GameResult:
    """Play one game to its end and return how it ended.

    Args:
        config: See `load_config` (None: the `quick` preset).
        agents: Who plays: None seats the configuration's sides (`crew` and
            `impostor`: `scripted`, `aria`, ...), exactly as `mineamongus play`; or one
            agent per seat; or a factory `(seat, role) -> agent`.
        world: `minecraft` (the embedded server, or `config.server.external`) or `fake`.
        out: The run folder (None: `runs/<time>-seed<N>`); it must not hold a record.
        progress: Called with one line of text per step.
        spec: The map (default: the configuration's `map`).
        **overrides: Configuration fields that win over `config` (e.g. `seed=3`).

    Returns:
        The outcome, with `out_dir` holding `events.jsonl` and `summary.json`.

    Example:
        >>> result = mineamongus.play({"seed": 1}, world="fake", out="runs/api-1")
        >>> result.winner, result.ending
    """
    from controller.players import agent_factory, check_sides

    resolved = load_config(config, **overrides)
    spec = spec if spec is not None else load_map(resolved.map)
    geometry = ShipGeometry(spec)
    folder = fresh_folder(out, resolved.seed)
    if agents is None:
        check_sides(resolved)
        agents = agent_factory(resolved, geometry, folder)
    room = open_world(world, resolved, geometry, folder)
    try:
        return Game(resolved, spec, room, agents, folder, progress=progress).run()
    finally:
        room.close()


__all__ = ["Agents", "ConfigLike", "GameResult", "WorldKind", "load_config", "open_world", "play"]
