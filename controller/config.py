"""Typed, nested game configuration with presets.

A configuration is resolved in three layers: the built-in preset (`quick`,
`balanced` or `paper`), then an optional YAML file, then command-line values. The resolved
object is written in full into every run record.
"""

from __future__ import annotations

import copy
import functools
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.agents.registry import AgentKindError, translate_side, validate_args
from controller.rules import RulesConfig as RulesConfig

PRESETS = ("quick", "paper", "balanced")

DEFAULT_COLORS = ("red", "blue", "green", "pink", "orange", "yellow", "black", "white")


class ConfigError(ValueError):
    """A configuration value is missing or wrong; the message names the field."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


SimSpeed = Annotated[int, Field(ge=1, le=1000)] | Literal["max"]
"""A simulation speed: how many times real time the world's batches play, or `max`."""

EMBEDDED_SPEED: SimSpeed = "max"
"""The simulation speed of the embedded server unless the configuration names one."""


class ServerConfig(_Frozen):
    """Where the Minecraft server is."""

    external: str | None = None
    """`HOST:PORT` of an external server; None starts the embedded offline server."""
    version: str = "1.20.1"
    """Minecraft protocol version spoken by server and bots."""
    view_distance: int = Field(default=4, ge=2, le=10)
    """Chunk view distance of the embedded server."""
    admin: str = "MAU_Admin"
    """Operator account used for server-side commands on an external server."""
    speed: SimSpeed = EMBEDDED_SPEED
    """Simulation speed of the world's batches: `1` = real time (a physics step every
    50 ms of wall time), `N` = N times real time, `max` = as fast as the bots can be
    simulated. Game time counts physics steps at every speed, so the rules and the
    record are the same. Left out, it is `max` on the embedded server and 1 on an
    external one; an external server only runs at 1 (a server we do not run may
    enforce movement speed)."""

    @model_validator(mode="before")
    @classmethod
    def _speed_for_the_server(cls, data: Any) -> Any:
        # Left out (or null), the speed follows the server: an external one plays at 1.
        if isinstance(data, dict) and data.get("speed") is None:
            data = {k: v for k, v in data.items() if k != "speed"}
            if data.get("external") is not None:
                data["speed"] = 1
        return data

    @model_validator(mode="after")
    def _external_at_real_time(self) -> ServerConfig:
        if self.external is not None and self.speed != 1:
            raise ValueError(
                f"server.speed={self.speed!r} needs the embedded server: an external server "
                "plays at real time (set server.speed to 1 or leave it out)"
            )
        return self

    def external_address(self) -> tuple[str, int] | None:
        """Parse `external` into `(host, port)`, or None for the embedded server."""
        if self.external is None:
            return None
        host, sep, port = self.external.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(
                f"server.external={self.external!r} is not HOST:PORT (e.g. 127.0.0.1:25565)"
            )
        return host, int(port)


class SideConfig(_Frozen):
    """Who plays one side (all crewmates, or all impostors): an agent kind and its args."""

    agent: str = "scripted"
    """The agent kind (`scripted`, `aria`, or one a plugin registers; see
    `controller.agents.registry`)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The kind's arguments, validated by the kind (`docs/aria.md` lists those of `aria`);
    the resolved config holds them with every default filled in."""

    @model_validator(mode="before")
    @classmethod
    def _own_form(cls, data: Any) -> Any:
        # A side written in a harness's own form (ARIA's older flat form, `crew: {backend:
        # openai:MODEL, spec: {...}}`) is translated by the side format that harness
        # registers; the controller knows no harness's field names.
        if isinstance(data, dict) and set(data) - set(cls.model_fields):
            return translate_side(data)
        return data


class SeatConfig(SideConfig):
    """Who plays one seat, over its side's kind: an agent kind and its args (see
    `GameConfig.seats`)."""


class GameConfig(_Frozen):
    """Everything that defines one game."""

    preset: str = "quick"
    """Name of the preset this configuration started from."""
    map: str = "skeld"
    """Map name under `world/maps/` or a path to a map YAML file."""
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    """Seed of every random choice of the game (roles, tasks, scripted agents); a
    non-negative integer below 2**31 (a negative one would draw the same game as its
    absolute value; a larger one is refused as a typo)."""
    crew: SideConfig = SideConfig()
    """Who plays the crewmates."""
    impostor: SideConfig = SideConfig()
    """Who plays the impostors."""
    seats: dict[str, SeatConfig] = Field(default_factory=dict)
    """Per-seat overrides of the sides, by seat colour: that seat is played by this
    agent kind whatever role it draws, the other seats by their side's kind (e.g.
    `seats: {red: {agent: human}}` seats a person at red beside the models). Each
    entry's args are validated by its kind, as a side's (errors name
    `seats.<colour>.args.<field>`); a colour must be one of the game's seats."""
    rules: RulesConfig = RulesConfig()
    """The rules."""
    server: ServerConfig = ServerConfig()
    """The Minecraft server."""
    step_timeout_ms: int = Field(default=20000, ge=1000)
    """Game-time limit of one step's programs (`step_timeout_ms / 50` ticks of the game
    clock, on every world); a program still running then is cancelled."""
    reconnect_attempts: int = Field(default=2, ge=0)
    """How often a disconnected bot is reconnected before the game is declared invalid."""
    frames: Literal["off", "jpg", "png"] = "jpg"
    """First-person frames: rendered every step and saved as `frames/<step>/<agent>.<fmt>`;
    `off` renders none (observations then carry no picture)."""
    colors: tuple[str, ...] = DEFAULT_COLORS
    """Seat colours, which are also the agent ids, in seat order."""
    names: dict[str, str] = Field(default_factory=dict)
    """Player names by seat colour (e.g. the reference's roster, `red: James`); a seat
    without one is named by its capitalised colour. Recorded in `game_start.names` to
    map seats to the reference's players; players are still addressed by colour in play
    (chat, prompts, the judge). Every key must be one of the game's seats."""
    sample_interval_ticks: int = Field(default=10, ge=1, le=10)
    """Ticks between the free-roam pose samples logged as `trace` events (at most 10,
    so that "I passed through Electrical" can be checked from the log)."""

    def agent_ids(self) -> list[str]:
        """The ids of all seats (PettingZoo's `possible_agents`)."""
        return list(self.colors[: self.rules.n_players])

    def player_names(self) -> dict[str, str]:
        """Every seat's player name, in seat order (`names`, else the capitalised colour)."""
        return {a: self.names.get(a, a.capitalize()) for a in self.agent_ids()}


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def preset_dict(name: str) -> dict[str, Any]:
    """Load a built-in preset as a plain dict (a private copy: the caller may change it)."""
    if name not in PRESETS:
        raise ConfigError(f"preset={name!r} is unknown; choose one of {', '.join(PRESETS)}")
    return copy.deepcopy(_preset_data(name))


@functools.cache
def _preset_data(name: str) -> dict[str, Any]:
    """A built-in preset's file, parsed once per process (a study expands hundreds of
    configurations from one preset); shared, so `preset_dict` hands out copies."""
    text = resources.files("controller").joinpath(f"presets/{name}.yaml").read_text()
    data = yaml.safe_load(text) or {}
    data["preset"] = name
    return dict(data)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML configuration file into a dict (validated later, with the rest)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config {p}: no such file")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {p}: not valid YAML ({exc})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config {p}: the top level must be a mapping of fields")
    return data


def resolve_config(
    preset: str = "quick",
    file_data: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> GameConfig:
    """Build a GameConfig from a preset, a config file's data and explicit overrides.

    Args:
        preset: Name of a built-in preset; a `preset` key in `file_data` wins.
        file_data: Values from a YAML file, nested like GameConfig.
        overrides: Values from the command line, nested like GameConfig.

    Raises:
        ConfigError: naming every offending field and what is expected.
    """
    file_data = dict(file_data or {})
    chosen = str(file_data.pop("preset", preset))
    if overrides and "preset" in overrides:
        chosen = str(overrides["preset"])
    data = _deep_merge(preset_dict(chosen), file_data)
    data = _deep_merge(data, {k: v for k, v in (overrides or {}).items() if k != "preset"})
    try:
        config = GameConfig.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"] if str(p)) or "(top level)"
            lines.append(f"  {field}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigError("invalid configuration:\n" + "\n".join(lines)) from exc
    sides: dict[str, SideConfig] = {}
    for name in ("crew", "impostor"):
        side: SideConfig = getattr(config, name)
        try:
            args = validate_args(side.agent, side.args, name)
        except AgentKindError as exc:
            raise ConfigError(f"invalid configuration:\n  {exc}") from exc
        sides[name] = side.model_copy(update={"args": args.model_dump(mode="json")})
    _check_seat_keys(config)
    return config.model_copy(update={**sides, "seats": _resolve_seats(config)})


def _check_seat_keys(config: GameConfig) -> None:
    """Check that the fields naming seats name seats of the game.

    Raises:
        ConfigError: A `names` key or a fixed impostor (`rules.roles: fixed`) that is
            no seat of the game.
    """
    ids = config.agent_ids()
    seats = f"the seats are {', '.join(ids)} (the first `rules.n_players` of `colors`)"
    unknown = [c for c in config.names if c not in ids]
    if unknown:
        raise ConfigError(
            f"invalid configuration:\n  names: no seat has the colour "
            f"{', '.join(map(repr, unknown))}; {seats}, so key each name by one of them or "
            f"drop it (e.g. names: {{{ids[0]}: James}})"
        )
    rules = config.rules
    missing = [c for c in rules.fixed_impostors if c not in ids]
    if rules.roles == "fixed" and missing:
        raise ConfigError(
            f"invalid configuration:\n  rules.fixed_impostors: no seat has the colour "
            f"{', '.join(map(repr, missing))}; {seats}, so name impostors among them, or set "
            "rules.roles: seeded"
        )


def _resolve_seats(config: GameConfig) -> dict[str, SeatConfig]:
    """The per-seat overrides with their kinds' args validated and defaults filled in.

    Raises:
        ConfigError: A colour that is no seat of the game, or args the kind refuses.
    """
    ids = config.agent_ids()
    out: dict[str, SeatConfig] = {}
    for colour, seat in config.seats.items():
        where = f"seats.{colour}"
        if colour not in ids:
            raise ConfigError(
                f"invalid configuration:\n  {where}: no seat has the colour {colour!r}; "
                f"the seats are {', '.join(ids)} (the first `rules.n_players` of `colors`), "
                f"so key the override by one of them (e.g. seats: {{{ids[0]}: {{agent: human}}}})"
            )
        try:
            args = validate_args(seat.agent, seat.args, where)
        except AgentKindError as exc:
            raise ConfigError(f"invalid configuration:\n  {exc}") from exc
        out[colour] = seat.model_copy(update={"args": args.model_dump(mode="json")})
    return out
