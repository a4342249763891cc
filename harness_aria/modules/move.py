"""MOVE: go to a room, follow a player, or wander.

With `AriaSpec.action: codegen` (the reference's), the decision's program is written by
the model in a codegen call and translated (`harness_aria.codegen`); with `primitives`,
the module builds it from primitives itself.
"""

from __future__ import annotations

from controller.actions import AnyAction, Follow, GoTo, Look
from controller.observation import Observation
from harness_aria.codegen import BUDGET as CODEGEN_BUDGET
from harness_aria.codegen import PURPOSE as CODEGEN
from harness_aria.codegen import plan_follow, plan_room, write_program
from harness_aria.modules.base import ModuleResult, failed, planner_target, reader
from harness_aria.modules.registry import Target, register_module
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit


def offered(obs: Observation, spec: AriaSpec) -> bool:
    """Always offered in free roam."""
    return True


@register_module(
    "MOVE",
    budgets={"move": (0.2, 512), CODEGEN: CODEGEN_BUDGET},
    offered=offered,
    rank=50,
    target=Target("a room id or a player to follow", order=1),
    continues=True,
    number=6,
)
class MoveModule:
    """Move somewhere; crewmates look around afterwards."""

    name = "MOVE"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask where to go and synthesise the walk."""
        obs = tk.obs
        rooms = list(tk.geometry.rooms)
        living = [p for p in obs.players if p not in obs.known_dead and p != obs.agent]
        given = planner_target(tk)
        if given is not None:
            # The planner named where to go: no second question (`module_calls: needed`).
            follow, room = given.choice("target", living), given.choice("target", rooms)
            if follow or room:
                return await _program(
                    tk, follow, room, reasoning=choice.reasoning, intent=choice.intent
                )
        answer = await tk.ask(
            "move",
            tk.prompt("move"),
            image=True,
            rooms=", ".join(rooms),
            roster=", ".join(living),
            intent_field=', "intent": "your private true intent in one line"'
            if tk.impostor
            else "",
        )
        if answer is None:
            return failed(tk, "move")
        read = reader(tk, answer)
        follow = read.choice("follow", living)
        room = read.choice("room", rooms)
        if not (follow or room):
            return ModuleResult(
                invalid=f"move answer names no known room or player: {answer}", memo="no move"
            )
        return await _program(
            tk, follow, room, reasoning=read.text("reasoning"), intent=read.text("intent")
        )


async def _program(
    tk: Toolkit, follow: str | None, room: str | None, *, reasoning: str, intent: str
) -> ModuleResult:
    """The decision's program: written by the model (`action: codegen`) or built here."""
    if tk.spec.action != "codegen":
        return _walk(tk, follow, room, reasoning=reasoning, intent=intent)
    plan = plan_follow(tk, follow) if follow else plan_room(tk, str(room))
    written = await write_program(tk, plan, reasoning=reasoning, intent=intent)
    return ModuleResult(**written.result_fields())


def _walk(
    tk: Toolkit, follow: str | None, room: str | None, *, reasoning: str, intent: str
) -> ModuleResult:
    """Follow a player (preferred) or walk to a room; crewmates look around afterwards."""
    actions: list[AnyAction]
    if follow:
        actions = [Follow(agent=follow, distance=3.0, ticks=100)]
        memo = f"followed {follow}"
    else:
        actions = [GoTo(room=room)]
        memo = f"went to {room}"
    if not tk.impostor:
        actions.append(Look(behind=True))
    return ModuleResult(actions=actions, reasoning=reasoning, narration=intent, memo=memo)
