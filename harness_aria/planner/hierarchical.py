"""Hierarchical planning: a long-term strategy kept and refined, and a short-term step."""

from __future__ import annotations

from harness_aria.modules.base import text
from harness_aria.planner.base import parse_choice, planner_values, register_planner
from harness_aria.toolkit import Choice, Toolkit

PLAN_FIELD = ', "plan": "your next few steps in one sentence"'


@register_planner(
    "hierarchical",
    budgets={"planner": (0.3, 256), "planner_long": (0.3, 256)},
    args=lambda spec: {"replan_every": spec.replan_every},
)
class HierarchicalPlanner:
    """Every `replan_every` calls a strategy call; each step a short-term call under it.

    A failed strategy call keeps the previous strategy; a dead priority target is
    dropped.
    """

    def __init__(self, replan_every: int = 5) -> None:
        self.replan_every = replan_every
        self.calls = 0
        self.strategy = ""
        self.priority: str | None = None
        self.plan_text = ""

    async def choose(self, tk: Toolkit, allowed: list[str]) -> Choice | None:
        """Refresh the strategy when due, then ask for this step's module."""
        if self.priority in tk.obs.known_dead:
            self.priority = None
        if self.calls % self.replan_every == 0:
            answer = await tk.ask("planner_long", tk.prompt("planner_long"))
            if answer is not None:
                self.strategy = text(answer, "strategy") or self.strategy
                target = text(answer, "priority_target").lower()
                self.priority = target if target in tk.obs.players else None
        self.calls += 1
        tk.plan_text = self._text()
        role = "impostor" if tk.impostor else "crewmate"
        values = planner_values(tk, allowed)
        answer = await tk.ask(
            "planner",
            tk.prompt(f"planner_{role}"),
            plan_field=PLAN_FIELD,
            modules=values["modules"],
            stations_line=values["stations_line"],
            targets=values["targets"],
        )
        choice = parse_choice(answer, allowed) if answer is not None else None
        if choice is not None:
            if choice.target is None and choice.module == "KILL":
                choice.target = self.priority
            self.plan_text = self._text(choice.plan)
        return choice

    def _text(self, plan: str = "") -> str:
        lines = []
        if self.strategy:
            lines.append(f"Strategy: {self.strategy}")
        if self.priority:
            lines.append(f"Priority target: {self.priority}")
        if plan:
            lines.append(f"Plan: {plan}")
        return "\n".join(lines)
