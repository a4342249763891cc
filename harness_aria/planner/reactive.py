"""Reactive planning: one call picks the module."""

from __future__ import annotations

from harness_aria.planner.base import parse_choice, planner_values, register_planner
from harness_aria.toolkit import Choice, Toolkit


@register_planner("reactive", budgets={"planner": (0.3, 256)})
class ReactivePlanner:
    """One model call per step; its reasoning is also the plan."""

    def __init__(self) -> None:
        self.plan_text = ""

    async def choose(self, tk: Toolkit, allowed: list[str]) -> Choice | None:
        """Ask which module to run."""
        role = "impostor" if tk.impostor else "crewmate"
        values = planner_values(tk, allowed)
        answer = await tk.ask(
            "planner",
            tk.prompt(f"planner_{role}"),
            plan_field="",
            modules=values["modules"],
            stations_line=values["stations_line"],
            targets=values["targets"],
        )
        choice = parse_choice(answer, allowed) if answer is not None else None
        if choice is not None:
            self.plan_text = f"Current plan: {choice.reasoning}" if choice.reasoning else ""
        return choice
