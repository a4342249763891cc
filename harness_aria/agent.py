"""The ARIA agent: planner -> module -> program, with memory, reflection and a state view.

Each free-roam step the planner picks one of the modules the situation allows; the
module asks the model its own question (with the first-person frame where the
reference does) and synthesises a program of whitelisted primitives. Meetings run
MEETING on the agent's turn and VOTE at the vote. Every model call is recorded; an
unusable answer is recorded as invalid and the bot stands still (the documented
fallback), an infrastructure failure is recorded apart from the model's behaviour.
"""

from __future__ import annotations

from typing import Any

from controller.agents.base import AgentDecision
from controller.observation import Observation
from controller.views import build_view
from harness_aria.backends.base import Backend
from harness_aria.memory import MEMORIES, Memory
from harness_aria.modules import MODULES, Module, ModuleResult
from harness_aria.modules.kill import KillModule
from harness_aria.modules.surveillance import SurveillanceModule
from harness_aria.planner import HierarchicalPlanner, Planner, ReactivePlanner
from harness_aria.prompts import load_prompt
from harness_aria.reflection import MeetingReflection, NoReflection, Reflector
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit
from world.geometry import ShipGeometry


class AriaAgent:
    """One seat played by ARIA.

    Args:
        agent_id: The seat (a colour).
        spec: The ablation spec.
        backend: The model backend.
        geometry: The map.
        kill_range: Kill range of the rules (told to the model).
        report_range: Report range of the rules.
        max_utterances: Meeting utterance limit of the rules.
    """

    def __init__(
        self,
        agent_id: str,
        spec: AriaSpec,
        backend: Backend,
        geometry: ShipGeometry,
        *,
        kill_range: float = 3.0,
        report_range: float = 2.0,
        max_utterances: int = 3,
    ) -> None:
        self.agent_id = agent_id
        self.spec = spec
        self.backend = backend
        self.geometry = geometry
        self.rules = {
            "kill_range": kill_range,
            "report_range": report_range,
            "max_utterances": max_utterances,
        }
        self.memory: Memory = MEMORIES[spec.memory](spec.window_k)
        self.planner: Planner = (
            ReactivePlanner()
            if spec.planning == "reactive"
            else HierarchicalPlanner(spec.replan_every)
        )
        self.reflector: Reflector = (
            MeetingReflection(spec.skill_cap) if spec.reflection == "on" else NoReflection()
        )
        self.modules: dict[str, Module] = {name: make() for name, make in MODULES.items()}
        self.last_phase = "free_roam"
        self.last_choice: tuple[str, list[dict[str, Any]]] | None = None
        self.last_tasks_done = 0
        self.surveil_next = False

    def describe(self) -> dict[str, Any]:
        """The agent's kind, backend and spec for the game record."""
        return {
            "kind": "aria",
            "backend": self.backend.address,
            "vision": self.backend.vision,
            "spec": self.spec.model_dump(),
        }

    def _persona(self, obs: Observation) -> str:
        team = (
            f"Your fellow impostors: {', '.join(obs.teammates)}."
            if obs.teammates
            else "You do not know who the impostors are."
        )
        return load_prompt("persona", "common").render(
            name=obs.agent.capitalize(), role=obs.role, team_line=team, **self.rules
        )

    def _allowed(self, obs: Observation) -> list[str]:
        allowed = []
        if obs.role == "impostor" and obs.kill_ready:
            allowed.append("KILL")
        if obs.visible_bodies:
            allowed.append("REPORT")
        if obs.emergency_ready:
            allowed.append("EMERGENCY")
        if obs.role == "impostor" or any(s not in obs.tasks_done for s in obs.tasks):
            allowed.append("MISSION")
        allowed.append("MOVE")
        if obs.role == "crewmate":
            allowed.append("SURVEILLANCE")
        return allowed

    async def decide(self, obs: Observation) -> AgentDecision:
        """Plan, run the chosen module, and return the program with its records."""
        self.memory.observe(obs)
        view = build_view(obs, self.spec.state, self.geometry)
        tk = Toolkit(
            spec=self.spec,
            backend=self.backend,
            geometry=self.geometry,
            persona=self._persona(obs),
            obs=obs,
            view_text=view.to_text(),
            memory=self.memory,
            skills_text=self.reflector.skills_text(),
            plan_text=self.planner.plan_text,
        )
        self._learn(obs)
        if obs.phase == "free_roam" and self.last_phase == "voting":
            await self.reflector.after_meeting(tk)
        self.last_phase = obs.phase
        module, choice = "", Choice(module="")
        result: ModuleResult
        if obs.phase == "meeting":
            module = "MEETING"
            result = await self.modules[module].run(tk, choice)
        elif obs.phase == "voting":
            module = "VOTE"
            result = await self.modules[module].run(tk, choice)
        else:
            kill = self.modules["KILL"]
            if self.surveil_next and obs.role == "crewmate":
                surveillance = self.modules["SURVEILLANCE"]
                assert isinstance(surveillance, SurveillanceModule)
                await surveillance.observe(tk)
            assert isinstance(kill, KillModule)
            target = kill.scanning(obs.step)
            if target is not None:
                module, choice = "KILL", Choice(module="KILL", target=target)
                result = await kill.run(tk, choice)
            else:
                picked = await self.planner.choose(tk, self._allowed(obs))
                if picked is None:
                    module = "PLANNER"
                    result = ModuleResult(
                        invalid=tk.last_error() or "planner answer names no allowed module",
                        memo="no plan",
                    )
                else:
                    module, choice = picked.module, picked
                    result = await self.modules[module].run(tk, choice)
            self.surveil_next = any(
                a.get("op") == "look" and a.get("behind") for a in result.actions
            )
        self.memory.record(obs.step, module, result.memo or result.reasoning)
        if result.actions:
            self.last_choice = (module, result.actions)
        return self._decision(tk, module, result, choice)

    def _learn(self, obs: Observation) -> None:
        """Skill memory: a task finished since the last step is a program that worked."""
        done = len(obs.tasks_done)
        if done > self.last_tasks_done and self.last_choice is not None:
            module, actions = self.last_choice
            self.reflector.succeeded(
                situation=f"a pending task near {obs.room}",
                behavior=f"{module}: {actions}",
                outcome="task completed",
            )
        self.last_tasks_done = done

    def _decision(
        self, tk: Toolkit, module: str, result: ModuleResult, choice: Choice
    ) -> AgentDecision:
        calls = [c.model_dump() for c in tk.calls]
        infra = ""
        if result.invalid and tk.infrastructure_failed():
            infra = tk.calls[-1].error_class
        narration = ""
        if tk.impostor:
            narration = result.narration or choice.intent or result.reasoning
        return AgentDecision(
            program=result.actions if not result.invalid else [],
            vote=result.vote,
            abstain=result.abstain,
            module=module,
            raw=tk.calls[-1].raw if tk.calls else "",
            reasoning=result.reasoning or choice.reasoning,
            narration=narration,
            invalid=result.invalid,
            infrastructure=infra,
            calls=calls,
            spec=self.spec.model_dump(),
        )
