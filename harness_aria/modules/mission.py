"""MISSION: do a task (impostors fake one).

With `AriaSpec.action: codegen` (the reference's), the model writes the program (go to
the station, activate it, stand still) in a codegen call, translated by
`harness_aria.codegen`; with `primitives`, the module builds `use_station` itself.
"""

from __future__ import annotations

from controller.actions import AnyAction, Look, UseStation
from controller.observation import Observation
from harness_aria.codegen import BUDGET as CODEGEN_BUDGET
from harness_aria.codegen import PURPOSE as CODEGEN
from harness_aria.codegen import plan_station, write_program
from harness_aria.modules.base import (
    ModuleResult,
    failed,
    planner_target,
    reader,
    station_listing,
)
from harness_aria.modules.registry import Target, register_module
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit


def offered(obs: Observation, spec: AriaSpec) -> bool:
    """Offered to an impostor (a fake task) and to a crewmate with a task pending."""
    return obs.role == "impostor" or any(s not in obs.tasks_done for s in obs.tasks)


@register_module(
    "MISSION",
    budgets={"mission": (0.2, 512), CODEGEN: CODEGEN_BUDGET},
    offered=offered,
    rank=40,
    target=Target("a station id", order=2),
    continues=True,
    number=7,
)
class MissionModule:
    """Walk to a station and stand at it for the task time."""

    name = "MISSION"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask which station, then use it; crewmates look around afterwards."""
        obs = tk.obs
        if tk.impostor:
            stations = tk.geometry.station_ids()
            note = "You have no real tasks: pick a station to fake one where others can see you."
        else:
            stations = [s for s in obs.tasks if s not in obs.tasks_done]
            note = "Pick one of your pending tasks."
            if not stations:
                return ModuleResult(
                    invalid="MISSION chosen but all tasks are done", memo="no task left"
                )
        given = planner_target(tk)
        if given is not None and (station := given.station("target", stations)) is not None:
            # The planner named the station: no second question (`module_calls: needed`).
            return await _program(tk, station, reasoning=choice.reasoning, intent=choice.intent)
        listing = station_listing(tk, stations)
        answer = await tk.ask(
            "mission",
            tk.prompt("mission"),
            mission_note=note,
            stations=listing,
            intent_field=', "intent": "your private true intent in one line"'
            if tk.impostor
            else "",
        )
        if answer is None:
            return failed(tk, "mission")
        read = reader(tk, answer)
        station = read.station("station", stations)
        if station is None:
            return ModuleResult(
                invalid=f"mission answer names station {answer.get('station')!r}"
                f", not one of {stations}",
                memo="no task",
            )
        return await _program(
            tk, station, reasoning=read.text("objective"), intent=read.text("intent")
        )


async def _program(tk: Toolkit, station: int, *, reasoning: str, intent: str) -> ModuleResult:
    """The decision's program: written by the model (`action: codegen`) or built here."""
    if tk.spec.action != "codegen":
        return _use(tk, station, reasoning=reasoning, intent=intent)
    written = await write_program(tk, plan_station(tk, station), reasoning=reasoning, intent=intent)
    return ModuleResult(**written.result_fields())


def _use(tk: Toolkit, station: int, *, reasoning: str, intent: str) -> ModuleResult:
    """Use a station; crewmates look around afterwards."""
    actions: list[AnyAction] = [UseStation(station=station)]
    if not tk.impostor:
        actions.append(Look(behind=True))
    return ModuleResult(
        actions=actions,
        reasoning=reasoning,
        narration=intent,
        memo=f"{'faked' if tk.impostor else 'did'} task at station {station}",
    )
