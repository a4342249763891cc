"""The planner interface: pick this step's module; planners registered by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

from harness_aria.modules.base import name_of, station_listing, text
from harness_aria.modules.registry import target_hints
from harness_aria.spec import AriaSpec, Catalogue
from harness_aria.toolkit import Budget, Choice, Toolkit, register_budgets


class Planner(Protocol):
    """Chooses one of the allowed modules each free-roam step."""

    plan_text: str

    async def choose(self, tk: Toolkit, allowed: list[str]) -> Choice | None:
        """The choice, or None when the model's answer was unusable."""
        ...


PLANNERS: Catalogue[Planner] = Catalogue("planning")
"""The planners by `AriaSpec.planning` value (`register_planner`); `PLANNERS.build(spec)`
makes the spec's."""

_P = TypeVar("_P", bound=type)


def register_planner(
    name: str,
    *,
    budgets: Mapping[str, Budget],
    args: Callable[[AriaSpec], dict[str, Any]] | None = None,
) -> Callable[[_P], _P]:
    """A class decorator registering a planner under its `AriaSpec.planning` value.

    Args:
        name: The spec value that selects it.
        budgets: (temperature, max_tokens) of each call purpose it asks under.
        args: Its constructor's keyword arguments, read from the spec.
    """

    def add(cls: _P) -> _P:
        register_budgets(f"planner {name!r}", budgets)
        PLANNERS.register(name, cast(Callable[..., Planner], cls), args)
        return cls

    return add


def stations(tk: Toolkit) -> list[int]:
    """The stations MISSION may use: a crewmate's pending tasks, any for an impostor."""
    if tk.impostor:
        return tk.geometry.station_ids()
    return [s for s in tk.obs.tasks if s not in tk.obs.tasks_done]


def planner_values(tk: Toolkit, allowed: list[str]) -> dict[str, str]:
    """The placeholders of a planner template: the modules offered; with MISSION among
    them, the stations it may use (so a MISSION target names one), unless the state view
    lists them already (a privileged crewmate's "Your tasks"); and what `target` names
    for each module of the agent's role that takes one (`registry.target_hints`)."""
    line = ""
    listed = not tk.impostor and tk.spec.state == "privileged"
    if "MISSION" in allowed and not listed and (ids := stations(tk)):
        line = f"\nStations you may use: {station_listing(tk, ids)}"
    return {
        "modules": ", ".join(allowed),
        "stations_line": line,
        "targets": target_hints(tk.spec, tk.obs.role),
    }


def parse_choice(answer: dict[str, Any], allowed: list[str]) -> Choice | None:
    """A Choice from a planner answer, or None if it names no allowed module."""
    module = name_of(answer, "module", allowed)
    if module is None:
        return None
    target = answer.get("target")
    return Choice(
        module=module,
        target=str(target) if target not in (None, "", "null") else None,
        reasoning=text(answer, "reasoning"),
        intent=text(answer, "intent"),
        plan=text(answer, "plan"),
    )
