"""Typed, nested game configuration with presets.

A configuration is resolved in three layers: the built-in preset (`quick` or
`paper`), then an optional YAML file, then command-line values. The resolved
object is written in full into every run record.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.agents.registry import AgentKindError, validate_args

PRESETS = ("quick", "paper")

DEFAULT_COLORS = ("red", "blue", "green", "pink", "orange", "yellow", "black", "white")


class ConfigError(ValueError):
    """A configuration value is missing or wrong; the message names the field."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RulesConfig(_Frozen):
    """The rules the engine enforces. Ticks are 1/20 s."""

    n_players: int = Field(default=8, ge=3, le=8)
    """Number of seats in the game (each gets one of the eight colours)."""
    n_impostors: int = Field(default=2, ge=1)
    """How many seats are impostors; must leave more crewmates than impostors."""
    kill_range: float = Field(default=3.0, gt=0)
    """Largest killer-to-victim distance (blocks) at which a kill lands."""
    kill_cooldown_ticks: int = Field(default=240, ge=0)
    """Ticks an impostor must wait after a kill (and after each meeting) before the next."""
    initial_kill_cooldown_ticks: int = Field(default=100, ge=0)
    """Ticks from the start of the game before the first kill is allowed."""
    kill_defer_distance: float = Field(default=10.0, gt=0)
    """Leash of every `kill` program (blocks): its approach gives up, and the program
    fails saying so, once the target is farther than this from where the approach began;
    a strike never lands far from the place the killer judged safe."""
    report_range: float = Field(default=2.0, gt=0)
    """Largest distance (blocks) from a body at which it can be reported."""
    button_range: float = Field(default=2.5, gt=0)
    """Largest distance (blocks) from the emergency button at which it can be pressed."""
    station_range: float = Field(default=1.5, gt=0)
    """Largest distance (blocks) from a station's centre that counts as standing at it."""
    task_ticks: int = Field(default=40, ge=0)
    """Ticks a crewmate must stand at a station for its task to complete."""
    tasks_per_crewmate: int = Field(default=3, ge=1)
    """Distinct stations assigned to each crewmate."""
    emergency_initial_lockout_ticks: int = Field(default=300, ge=0)
    """Ticks from the start of the game during which the emergency button is locked."""
    emergency_lockout_after_meeting_ticks: int = Field(default=200, ge=0)
    """Ticks after each meeting during which the emergency button is locked."""
    emergency_per_player: int = Field(default=1, ge=0)
    """How many emergency meetings each player may call in one game."""
    max_utterances: int = Field(default=3, ge=1)
    """Most times one player may speak in one meeting."""
    meeting_max_ticks: int = Field(default=2400, ge=1)
    """Talk time of a meeting (game ticks from its call); when it is used up the meeting
    goes to the vote. Talk turns spend it (`talk_ticks_per_utterance`, `_per_pass`)."""
    talk_ticks_per_utterance: int = Field(default=100, ge=0)
    """Game ticks one spoken line costs. The reference's 6000-tick meeting holds 8
    players x 3 utterances, 250 ticks a line (the paper preset); the quick preset's
    2400-tick meeting gives 100."""
    talk_ticks_per_pass: int = Field(default=20, ge=0)
    """Game ticks a pass or a failed talk turn costs (a fifth of a line)."""
    vision_radius: float = Field(default=12.0, gt=0)
    """How far (blocks) a player can see another player or a body, line of sight permitting."""
    max_steps: int = Field(default=120, ge=1)
    """Step budget; when it is exceeded the game ends with the `timeout` ending."""
    timeout_winner: Literal["impostors", "crew"] = "impostors"
    """Who wins the `timeout` ending (the reference code scores it for the impostors)."""
    confirm_ejects: bool = False
    """Whether the server announces the role of an ejected player."""

    @model_validator(mode="after")
    def _crew_outnumbers(self) -> RulesConfig:
        if self.n_impostors * 2 >= self.n_players:
            raise ValueError(
                f"rules.n_impostors={self.n_impostors} leaves too few crewmates for "
                f"rules.n_players={self.n_players}; use fewer impostors than half the seats"
            )
        return self


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


LEGACY_SIDE_FIELDS = ("backend", "base_url", "text_only", "spec", "settings")
"""Side fields of the older form (`crew: {backend: openai:MODEL, spec: {...}}`); they are
moved into `args` of the `aria` kind (`backend: scripted` selects the `scripted` kind)."""


class SideConfig(_Frozen):
    """Who plays one side (all crewmates, or all impostors): an agent kind and its args."""

    agent: str = "scripted"
    """The agent kind (`scripted`, `aria`, or one a plugin registers; see
    `controller.agents.registry`)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The kind's arguments, validated by the kind (e.g. for `aria`: backend, base_url,
    text_only, spec, settings, temperature, max_tokens, seed, reasoning_effort,
    image_detail); the resolved config holds them with every default filled in."""

    @model_validator(mode="before")
    @classmethod
    def _translate_legacy(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(k in data for k in LEGACY_SIDE_FIELDS):
            return data
        data = dict(data)
        args = dict(data.get("args") or {})
        for key in LEGACY_SIDE_FIELDS:
            if key in data:
                args[key] = data.pop(key)
        backend = args.get("backend")
        if backend == "scripted":
            data["agent"] = "scripted"
            args = {}
        elif backend is not None:
            data["agent"] = "aria"
        data["args"] = args
        return data


class GameConfig(_Frozen):
    """Everything that defines one game."""

    preset: str = "quick"
    """Name of the preset this configuration started from."""
    map: str = "skeld"
    """Map name under `world/maps/` or a path to a map YAML file."""
    seed: int = Field(default=0, ge=0)
    """Seed of every random choice of the game (roles, tasks, scripted agents); a
    non-negative integer (a negative one would draw the same game as its absolute value)."""
    crew: SideConfig = SideConfig()
    """Who plays the crewmates."""
    impostor: SideConfig = SideConfig()
    """Who plays the impostors."""
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
    sample_interval_ticks: int = Field(default=10, ge=1, le=10)
    """Ticks between the free-roam pose samples logged as `trace` events (at most 10,
    so that "I passed through Electrical" can be checked from the log)."""

    def agent_ids(self) -> list[str]:
        """The ids of all seats (PettingZoo's `possible_agents`)."""
        return list(self.colors[: self.rules.n_players])


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def preset_dict(name: str) -> dict[str, Any]:
    """Load a built-in preset as a plain dict."""
    if name not in PRESETS:
        raise ConfigError(f"preset={name!r} is unknown; choose one of {', '.join(PRESETS)}")
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
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
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
    return config.model_copy(update=sides)
