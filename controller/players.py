"""Who plays each seat: the agent kind each side's configuration names.

Kinds come from `controller.agents.registry` (the controller never imports a harness);
each side gets one factory, so a side's agents share what its kind shares (one backend,
one connection pool, one prompt store); a seat named in `config.seats` gets its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from controller.agents.base import Agent
from controller.agents.registry import SideContext, SideFactory, get_kind, side_facts
from controller.config import GameConfig
from controller.events import Role
from controller.vocabulary import SideFacts, flat_settings
from world.geometry import ShipGeometry


def check_sides(config: GameConfig) -> None:
    """Fail early (before any server starts) if a side's agents could not be built.

    Raises:
        AgentKindError: naming the side's field and the way out (e.g. a missing key).
    """
    for name in ("crew", "impostor"):
        side = getattr(config, name)
        kind = get_kind(side.agent, f"{name}.agent")
        kind.check(kind.parse_args(side.args), name)
    for colour, seat in config.seats.items():
        kind = get_kind(seat.agent, f"seats.{colour}.agent")
        kind.check(kind.parse_args(seat.args), f"seats.{colour}")


def declared_sides(config: GameConfig) -> dict[str, SideFacts]:
    """`crew` and `impostor` -> the facts each side's agent kind declares (its `facts`,
    and the names of its ablation axes: the kind's `axes` attribute, if it has one), for
    `game_start.sides`. Readers take a side from these, never from its arguments.

    Raises:
        AgentKindError: Unknown kind or bad args (naming the field).
    """
    out: dict[str, SideFacts] = {}
    for name in ("crew", "impostor"):
        side = getattr(config, name)
        facts = side_facts(side.agent, side.args, name)
        settings = flat_settings(facts.axes)
        profile = settings.get("profile")
        axes = getattr(get_kind(side.agent, f"{name}.agent"), "axes", ())
        out[name] = SideFacts(
            kind=side.agent,
            backend=facts.backend,
            model=facts.model,
            billed=facts.billed,
            text_only=facts.text_only,
            profile=str(profile) if profile is not None else None,
            settings=settings,
            axes=[str(a) for a in axes],
        )
    return out


def agent_factory(
    config: GameConfig, geometry: ShipGeometry, run_dir: Path | None = None
) -> Callable[[str, Role], Agent]:
    """A function giving each seat its agent once roles are drawn.

    Args:
        config: The resolved game configuration.
        geometry: The map.
        run_dir: The run folder, for records agents keep (e.g. prompt texts).
    """
    factories: dict[str, SideFactory] = {}

    def make(agent_id: str, role: Role) -> Agent:
        name = "crew" if role == "crewmate" else "impostor"
        # A seat of `config.seats` gets a factory of its own (told the side its role
        # drew); the side's other seats share the side's.
        override = config.seats.get(agent_id)
        key = f"seats.{agent_id}" if override is not None else name
        if key not in factories:
            side = override if override is not None else getattr(config, name)
            kind = get_kind(side.agent, f"{key}.agent")
            context = SideContext(
                side=name, rules=config.rules, seed=config.seed, geometry=geometry, run_dir=run_dir
            )
            factories[key] = kind.side(kind.parse_args(side.args), context)
        return factories[key](agent_id)

    return make
