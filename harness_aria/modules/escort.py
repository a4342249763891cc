"""ESCORT (optional): a crewmate stays close to a player it can see, for safety in
numbers and to watch them. Off unless a spec lists it (`extra_modules: [ESCORT]`).

This file and its prompt (`harness_aria/prompts/common/escort.txt`) are the whole
module: it registers when it is offered, its budget and its planner target here.
"""

from __future__ import annotations

from controller.actions import Follow
from controller.observation import Observation
from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.modules.registry import Target, register_module
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit

ESCORT_DISTANCE = 2.5
"""How close the escort keeps (blocks)."""
ESCORT_TICKS = 100
"""How long it keeps to its player in one program (the step's length at 20 ticks/s)."""


def in_view(obs: Observation) -> list[str]:
    """The living players the agent sees now (its filtered observation)."""
    return sorted(p for p in obs.visible_players if p != obs.agent and p not in obs.known_dead)


def offered(obs: Observation, spec: AriaSpec) -> bool:
    """Offered to a crewmate with another living player in view."""
    return obs.role == "crewmate" and bool(in_view(obs))


@register_module(
    "ESCORT",
    budgets={"escort": (0.2, 256)},
    offered=offered,
    rank=55,
    target=Target("a player in view to stay with", order=4, roles=frozenset({"crewmate"})),
    default=False,
)
class EscortModule:
    """Ask which player in view to stay with; follow that player closely."""

    name = "ESCORT"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Follow the player the model names among those in view (never a guessed one)."""
        seen = in_view(tk.obs)
        if not seen:
            return ModuleResult(invalid="escort: nobody in view", memo="no one to escort")
        answer = await tk.ask(
            "escort",
            tk.prompt("escort"),
            players=", ".join(p.capitalize() for p in seen),
            suggestion=choice.target or "none",
        )
        if answer is None:
            return failed(tk, "escort")
        read = reader(tk, answer)
        player = read.choice("follow", seen)
        if player is None:
            return ModuleResult(
                invalid=f"escort answer names no player in view: {answer}", memo="no escort"
            )
        return ModuleResult(
            actions=[Follow(agent=player, distance=ESCORT_DISTANCE, ticks=ESCORT_TICKS)],
            reasoning=read.text("reasoning"),
            memo=f"stayed with {player}",
        )
