"""The planner interface: pick this step's module."""

from __future__ import annotations

from typing import Any, Protocol

from harness_aria.modules.base import name_of, station_listing, text
from harness_aria.toolkit import Choice, Toolkit


class Planner(Protocol):
    """Chooses one of the allowed modules each free-roam step."""

    plan_text: str

    async def choose(self, tk: Toolkit, allowed: list[str]) -> Choice | None:
        """The choice, or None when the model's answer was unusable."""
        ...


def stations(tk: Toolkit) -> list[int]:
    """The stations MISSION may use: a crewmate's pending tasks, any for an impostor."""
    if tk.impostor:
        return tk.geometry.station_ids()
    return [s for s in tk.obs.tasks if s not in tk.obs.tasks_done]


def planner_values(tk: Toolkit, allowed: list[str]) -> dict[str, str]:
    """The placeholders of a planner template: the modules offered and, with MISSION
    among them, the stations it may use (so a MISSION target names one), unless the
    state view lists them already (a privileged crewmate's "Your tasks")."""
    line = ""
    listed = not tk.impostor and tk.spec.state == "privileged"
    if "MISSION" in allowed and not listed and (ids := stations(tk)):
        line = f"\nStations you may use: {station_listing(tk, ids)}"
    return {"modules": ", ".join(allowed), "stations_line": line}


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
