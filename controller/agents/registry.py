"""Agent kinds, registered by name: who can play a side.

A side's configuration names a kind and its arguments (`crew: {agent: aria, args: {...}}`);
the kind validates the arguments (errors name the field, e.g. `crew.args.temperature`),
checks early what could stop a game before it starts (a missing API key), and builds the
side's agents. The controller knows only this interface: `scripted` is registered here,
and other packages register their kinds through the `mineamongus.agents` entry-point group
(each entry point is a callable that calls `register`) or by importing a registration
module before a game is configured (the CLI imports `harness_aria.registration`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from controller.agents.base import Agent

if TYPE_CHECKING:
    from controller.config import RulesConfig
    from world.geometry import ShipGeometry

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "mineamongus.agents"
"""Entry points of this group are called (with no arguments) to register agent kinds."""


class AgentKindError(ValueError):
    """An unknown kind or arguments its kind refuses; the message names the field."""


@dataclass(frozen=True)
class SideContext:
    """What a kind gets to build one side's agents.

    Attributes:
        side: `crew` or `impostor` (for messages and records).
        rules: The game's rules.
        seed: The game seed (kinds derive their own seeded RNGs from it).
        geometry: The map.
        run_dir: The run folder (for records an agent keeps, e.g. prompts), or None.
    """

    side: str
    rules: RulesConfig
    seed: int
    geometry: ShipGeometry
    run_dir: Path | None = None


SideFactory = Callable[[str], Agent]
"""Builds the agent of one seat of the side, by agent id."""


class AgentKind(Protocol):
    """One kind of agent."""

    name: str
    """The name a side's `agent` field uses."""

    def parse_args(self, args: Mapping[str, Any]) -> BaseModel:
        """Validate the side's `args` (raise pydantic's ValidationError when bad)."""
        ...

    def check(self, args: BaseModel, side: str) -> None:
        """Fail early (before any server starts) with a clear `AgentKindError`."""
        ...

    def side(self, args: BaseModel, context: SideContext) -> SideFactory:
        """The factory of the side's agents."""
        ...


_lock = threading.Lock()
_kinds: dict[str, AgentKind] = {}
_plugins_loaded = False


def register(kind: AgentKind) -> None:
    """Register a kind under its name (registering the same object again is a no-op).

    Raises:
        AgentKindError: Another kind already holds the name.
    """
    with _lock:
        held = _kinds.get(kind.name)
        if held is not None and held is not kind and type(held) is not type(kind):
            raise AgentKindError(f"agent kind {kind.name!r} is already registered")
        _kinds[kind.name] = kind


def load_plugins() -> None:
    """Call every `mineamongus.agents` entry point once (each registers its kinds)."""
    global _plugins_loaded
    with _lock:
        if _plugins_loaded:
            return
        _plugins_loaded = True
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry.load()()
        except Exception:  # a broken plugin must not hide the built-in kinds
            log.exception("agent plugin %s failed to register", entry.value)


def kinds() -> list[str]:
    """The registered kind names, sorted."""
    load_plugins()
    return sorted(_kinds)


def get_kind(name: str, field: str = "agent") -> AgentKind:
    """The kind registered under `name`.

    Raises:
        AgentKindError: Unknown name (the message lists the known kinds).
    """
    load_plugins()
    kind = _kinds.get(name)
    if kind is None:
        raise AgentKindError(
            f"{field}: unknown agent kind {name!r}; known kinds: {', '.join(sorted(_kinds))}"
        )
    return kind


def validate_args(name: str, args: Mapping[str, Any], side: str) -> BaseModel:
    """Validate a side's arguments with its kind.

    Raises:
        AgentKindError: Naming each bad field as `<side>.args.<field>: <problem>`.
    """
    kind = get_kind(name, f"{side}.agent")
    try:
        return kind.parse_args(args)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            lines.append(f"{side}.args.{where}: {err['msg']} (got {err.get('input')!r})")
        raise AgentKindError("; ".join(lines)) from exc


class NoArgs(BaseModel):
    """A kind without arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedKind:
    """`scripted`: the rule-based control agent (no arguments)."""

    name = "scripted"

    def parse_args(self, args: Mapping[str, Any]) -> BaseModel:
        """No arguments are accepted."""
        return NoArgs.model_validate(dict(args))

    def check(self, args: BaseModel, side: str) -> None:
        """Nothing can fail early."""

    def side(self, args: BaseModel, context: SideContext) -> SideFactory:
        """Scripted agents seeded from the game seed."""
        from controller.agents.scripted import ScriptedAgent

        def make(agent_id: str) -> Agent:
            return ScriptedAgent(agent_id, context.geometry, context.seed)

        return make


register(ScriptedKind())
