"""The ARIA agent: planner -> module -> program, with memory, reflection and a state view.

Each free-roam step the planner picks one of the modules the situation allows; the
module asks the model its own question (with the first-person frame where the
reference does) and synthesises a program of whitelisted primitives. Meetings run
MEETING on the agent's turn and VOTE at the vote. Every model call is recorded; an
unusable answer is recorded as invalid and the bot stands still (the documented
fallback), an infrastructure failure is recorded apart from the model's behaviour.

What the world says of the agent's last program reaches its memory as an own action;
for an ego agent a failure's reason is first reduced to what its view allows
(`harness_aria.memory.base.outcome_for_view`: no distances or positions of other
players, e.g. "the target yellow got away, the kill failed" for a kill approach given
up at its leash). A privileged agent keeps the reason as the world gave it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from controller.actions import (
    AnyAction,
    Follow,
    GoTo,
    KillTarget,
    PressButton,
    ReportBody,
    UseStation,
)
from controller.agents.base import AgentDecision
from controller.observation import ChatEntry, Observation, OwnAction
from controller.views import Knowledge
from harness_aria.backends.base import Backend
from harness_aria.calls import start_round
from harness_aria.memory import MEMORIES, Memory
from harness_aria.memory.base import actions_for_view, describe_program
from harness_aria.modules import Module, ModuleResult
from harness_aria.modules.base import claimants, followers
from harness_aria.modules.registry import enabled, is_ghost, offered_modules
from harness_aria.planner import PLANNERS, Planner
from harness_aria.reflection import REFLECTORS, Reflector
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit
from harness_aria.view_text import (
    assigned_missions,
    joined_view,
    render_look,
    render_view_layout,
)
from world.geometry import ShipGeometry

CONTINUABLE_OPS = frozenset({"go_to", "use_station", "look"})
"""Operations of a program that may continue into the next step (`AriaSpec.continuation`):
a walk, a task (walking to its station and standing there) and a look. A follow, a kill,
a report, a button press or speech is never carried on unasked."""


_View = tuple[frozenset[str], frozenset[str], tuple[str, ...]]
"""What an agent could see at a free-roam observation: players and bodies in view, and
the modules it could choose."""


def _appeared(before: _View, now: _View) -> bool:
    """True if a player or body came into view, or a module came on offer, between two
    observations (what leaves or is withdrawn does not count)."""
    return any(set(n) - set(b) for b, n in zip(before, now, strict=True))


@dataclass(frozen=True)
class _Program:
    """The program this agent sent last, kept to see at the next step what it achieved."""

    module: str
    actions: list[AnyAction]
    step: int
    room: str
    kill_ready: bool
    tasks_done: frozenset[int]
    dead: frozenset[str]


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
        impostors_may_skip: The rules' `impostors_may_skip` (False: an impostor's skip
            or unusable ballot becomes the reference's fallback vote).
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
        impostors_may_skip: bool = True,
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
        self.impostors_may_skip = impostors_may_skip
        # Every component is rebuilt from its registered name and the spec's arguments.
        self.memory: Memory = MEMORIES.build(spec)
        self.planner: Planner = PLANNERS.build(spec)
        self.reflector: Reflector = REFLECTORS.build(spec)
        self.entries = enabled(spec)
        """The registered modules this agent has (`harness_aria.modules.registry`)."""
        self.modules: dict[str, Module] = {e.name: e.make() for e in self.entries}
        self.phase_module: dict[str, str] = {
            e.phase: e.name for e in self.entries if e.phase != "free_roam"
        }
        """The module that runs as each phase's decision (meeting, voting)."""
        self.continuing = frozenset(e.name for e in self.entries if e.continues)
        """The modules whose programs may go on unasked (`AriaSpec.continuation`)."""
        self.knowledge = Knowledge(
            spec.state,
            geometry,
            ego_range=spec.ego_range,
            privileged_radius=spec.privileged_radius,
            ego_view=spec.ego_view,
        )
        self.last_phase = "free_roam"
        self.last_program: _Program | None = None
        self.meeting_chat: list[ChatEntry] = []
        self.last_free_actions: list[AnyAction] = []
        """The actions of the agent's last free-roam program, for the modules' follow-ups."""
        self.last_view: _View | None = None
        """What the agent could see at its last free-roam observation: players and bodies
        in view, and the modules it could choose (for `AriaSpec.continuation`)."""

    def describe(self) -> dict[str, Any]:
        """The agent's kind, backend and spec for the game record (the spec resolved: its
        profile, every setting, and which were given explicitly)."""
        return {
            "kind": "aria",
            "backend": self.backend.address,
            "vision": self.backend.vision,
            "spec": self.spec.model_dump(),
        }

    def _allowed(self, obs: Observation) -> list[str]:
        """The free-roam modules the planner is offered now (each module's registered
        `offered` over the filtered observation, in rank order)."""
        return offered_modules(self.entries, obs, self.spec)

    def _claim(self, step: int) -> Choice | None:
        """A module's claim on this step before the planner is asked (KILL's behind
        check), or None."""
        for module in claimants(self.modules.values()):
            choice = module.claim(step)
            if choice is not None:
                return choice
        return None

    async def decide(self, raw: Observation) -> AgentDecision:
        """Plan, run the chosen module, and return the program with its records."""
        # Every component works from the filtered observation only: the raw one is not
        # reachable from the toolkit, so no module can see past the state mode.
        start_round(self.backend, raw.step)
        obs = self._own_actions(self.knowledge.update(raw), raw)
        if self.spec.state == "ego":
            obs = actions_for_view(obs, obs.players)
        self.memory.observe(obs)
        view = self.knowledge.view(obs)
        content = self.spec.prompt_content
        # the crewmate's part of the reference's personal message: its assigned tasks and
        # their stations, in every state mode (an ego view carries no task locations)
        missions = assigned_missions(obs, self.geometry) if obs.role == "crewmate" else None
        layout = render_view_layout(view, content, missions)
        view_head, view_tasks, _ = layout
        view_text = joined_view(layout)
        tk = Toolkit(
            spec=self.spec,
            backend=self.backend,
            geometry=self.geometry,
            # No persona: the state view opens with who the agent is, its role and its
            # fellow impostors, and the shared prefix holds the rules, so the call's
            # system text is the module's template alone (the same for the whole side).
            persona="",
            obs=obs,
            view_text=view_text,
            view_head=view_head,
            view_tasks=view_tasks,
            memory=self.memory,
            skills_text=self.reflector.skills_text(),
            plan_text=self.planner.plan_text,
            look_text=render_look(view, content, missions),
            impostors_may_skip=self.impostors_may_skip,
        )
        self._learn(obs)
        running = self._still_running(obs)
        if running:
            return self._continuation(running)
        if obs.meeting_chat:
            self.meeting_chat = list(obs.meeting_chat)
        if obs.phase == "free_roam" and self.last_phase == "voting":
            await self.reflector.after_meeting(tk, self._recap(obs))
            self.meeting_chat = []
        self.last_phase = obs.phase
        module, choice = "", Choice(module="")
        result: ModuleResult
        ghost = is_ghost(obs)
        if obs.phase in self.phase_module and ghost:
            # A ghost has no meeting turn and no ballot (`GHOST_MODULES`); a controller
            # that asks one anyway gets no action and no vote.
            result = ModuleResult(reasoning="a ghost takes no part in meetings", memo="")
        elif obs.phase in self.phase_module:
            module = self.phase_module[obs.phase]
            result = await self.modules[module].run(tk, choice)
        else:
            # A ghost only does tasks and moves: no frame judged for SURVEILLANCE, no
            # KILL scan claimed.
            for follower in [] if ghost else followers(self.modules.values()):
                await follower.follow_up(tk, self.last_free_actions)
            claimed = None if ghost else self._claim(obs.step)
            if claimed is not None:
                module, choice = claimed.module, claimed
                result = await self.modules[module].run(tk, choice)
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
                    # Modules see this step's choice, not the plan of the step before.
                    tk.plan_text = self._plan_text(picked)
                    result = await self.modules[module].run(tk, choice)
            result = self._within_view(obs, module, result)
            self.last_free_actions = list(result.actions)
        self.memory.record(obs.step, module, self._memo(module, result, tk.impostor))
        self.last_program = (
            _Program(
                module=module,
                actions=list(result.actions),
                step=obs.step,
                room=obs.room,
                kill_ready=obs.kill_ready,
                tasks_done=frozenset(obs.tasks_done),
                dead=frozenset(obs.known_dead),
            )
            if result.actions and not result.invalid
            else None
        )
        return self._decision(tk, module, result, choice, view_text)

    def _still_running(self, obs: Observation) -> str:
        """With `continuation: on`, what of the last program is still running and may go
        on unasked ('' when the agent must be asked): the last program was a MISSION or
        MOVE of walks, tasks and looks, it timed out at the step's end (not finished, not
        failed or cancelled), no task of it was interrupted or finished, and nothing new
        came into what the agent can see since its last observation (a player or a body
        in view, a module it may choose, a server message); a player walking out of view
        or a module withdrawn is no reason to ask. Never across a meeting or with a KILL
        scan due."""
        view = None
        if obs.phase == "free_roam":
            view = (
                frozenset(obs.visible_players),
                frozenset(obs.visible_bodies),
                tuple(self._allowed(obs)),
            )
        before, self.last_view = self.last_view, view
        last = self.last_program
        if (
            self.spec.continuation != "on"
            or last is None
            or view is None
            or self.last_phase != "free_roam"
            or last.module not in self.continuing
            or last.step >= obs.step
        ):
            return ""
        ops = {a.op for a in last.actions}
        if not ops <= CONTINUABLE_OPS or not ops & {"go_to", "use_station"}:
            return ""
        ended = [a for a in obs.own_actions if a.kind == "program_ended"]
        if not ended or not ended[-1].detail.startswith("timeout"):
            return ""
        if any(a.kind in ("task_interrupted", "task_done") for a in obs.own_actions):
            return ""
        if before is None or obs.chat or _appeared(before, view):
            return ""
        if self._claim(obs.step) is not None:
            return ""
        if obs.task_progress is not None:
            return f"task at station {obs.task_progress.station} in progress"
        for a in last.actions:
            if isinstance(a, UseStation):
                return f"walk to station {a.station} not arrived"
            if isinstance(a, GoTo):
                return f"walk to {a.room} not arrived"
        return ""

    def _continuation(self, running: str) -> AgentDecision:
        """The last program again, unasked (logged as a `continuation`, not a decision)."""
        last = self.last_program
        assert last is not None
        return AgentDecision(
            program=list(last.actions),
            module=last.module,
            reasoning=running,
            spec=self.spec.model_dump(),
            continued=True,
            continued_from=last.step,
        )

    def _within_view(self, obs: Observation, module: str, result: ModuleResult) -> ModuleResult:
        """Ego: a program may not follow a player out of view, since the world would lead
        the bot to where the server knows that player is. Such a program is invalid
        (recorded with its reason), never rewritten into another move."""
        if self.spec.state != "ego" or result.invalid:
            return result
        unseen = [
            a.agent
            for a in result.actions
            if isinstance(a, Follow) and a.agent not in obs.visible_players
        ]
        if not unseen:
            return result
        return ModuleResult(
            reasoning=result.reasoning,
            narration=result.narration,
            invalid=f"{module}: follow {unseen[0]}, who is not in view (ego state)",
            memo=f"could not follow {unseen[0]}: not in view",
        )

    @staticmethod
    def _memo(module: str, result: ModuleResult, impostor: bool) -> str:
        """What memory records of this decision: what was set in motion, not its outcome
        (a task may time out or be interrupted; the outcome arrives as an own action)."""
        station = next((a.station for a in result.actions if isinstance(a, UseStation)), None)
        if module == "MISSION" and station is not None and not result.invalid:
            aim = "fake a task" if impostor else "do my task"
            return f"set off to station {station} to {aim}"
        return result.memo or result.reasoning

    def _plan_text(self, choice: Choice) -> str:
        line = f"This step you chose {choice.module}" + (
            f" with target {choice.target}." if choice.target else "."
        )
        return "\n".join(t for t in (self.planner.plan_text, line) if t)

    def _own_actions(self, known: Observation, raw: Observation) -> Observation:
        """Add the outcomes of this agent's last program that the observation does not
        state itself: a task finished (its station is now done) and a kill (the target
        is newly dead and this agent's kill cooldown restarted)."""
        last = self.last_program
        if last is None:
            return known
        have = {(a.kind, a.station, a.target) for a in raw.own_actions}
        added: list[OwnAction] = []
        for station in sorted(set(raw.tasks_done) - last.tasks_done):
            if not any(k == "task_done" and s == station for k, s, _ in have):
                added.append(
                    OwnAction(
                        step=last.step,
                        tick=raw.tick,
                        kind="task_done",
                        station=station,
                        room=self.geometry.station_room(station),
                    )
                )
        for a in last.actions:
            if not isinstance(a, KillTarget):
                continue
            target = a.target
            if (
                target in raw.known_dead
                and target not in last.dead
                and last.kill_ready
                and not raw.kill_ready
                and ("killed", None, target) not in have
            ):
                added.append(
                    OwnAction(
                        step=last.step,
                        tick=raw.tick,
                        kind="killed",
                        target=target,
                        room=known.dead_bodies_rooms.get(target),
                    )
                )
        if not added:
            return known
        return known.model_copy(update={"own_actions": [*known.own_actions, *added]})

    def _learn(self, obs: Observation) -> None:
        """Skill memory: a program of this agent's that achieved its aim becomes a skill
        (a crewmate's finished task; an impostor's kill, stalk, walk or fake task)."""
        last = self.last_program
        if last is None:
            return
        behavior = f"{last.module}: {describe_program(last.actions)}"
        situation = f"in {last.room}, step {last.step}"
        outcomes = [
            f"killed {a.target}" for a in obs.own_actions if a.kind == "killed" and a.target
        ]
        outcomes += [
            f"task {a.station} done"
            for a in obs.own_actions
            if a.kind == "task_done" and obs.role == "crewmate"
        ]
        if obs.role == "impostor" and not outcomes:
            aim = self._aim_reached(last, obs)
            if aim:
                outcomes.append(aim)
        for outcome in outcomes:
            self.reflector.succeeded(situation=situation, behavior=behavior, outcome=outcome)

    def _aim_reached(self, last: _Program, obs: Observation) -> str:
        """What an impostor's last program set out to do and did ('' if it did not)."""
        for a in last.actions:
            if isinstance(a, Follow):
                seen = obs.visible_players.get(a.agent)
                if seen is not None and math.dist(obs.pos, seen) <= self.spec.kill_defer_distance:
                    return f"caught up with {a.agent}"
            elif isinstance(a, GoTo) and a.room == obs.room != last.room:
                return f"reached {obs.room}"
            elif isinstance(a, UseStation):
                if obs.room == self.geometry.station_room(a.station):
                    return f"faked a task at station {a.station} in {obs.room}"
            elif isinstance(a, ReportBody | PressButton) and obs.phase == "meeting":
                return "called a meeting"
        return ""

    def _recap(self, obs: Observation) -> str:
        """The meeting that just ended, for reflection: its whole chat, votes, outcome."""
        # Its caller, outcome and every ballot are the state view's last "Earlier
        # meetings" line (the same facts); the recap names it rather than repeat it.
        last = obs.past_meetings[-1] if obs.past_meetings else None
        lines = [
            f"The meeting you are reflecting on: #{last.index} (its outcome and votes are "
            "under Earlier meetings above)."
            if last is not None
            else "The meeting you are reflecting on:"
        ]
        lines.append("Its whole chat:")
        lines += [
            f"  {'[Server]' if c.kind == 'server' else '<' + (c.speaker or '?').capitalize() + '>'}"
            f" {c.text}"
            for c in [*self.meeting_chat, *(c for c in obs.chat if c.kind == "server")]
        ] or ["  (nothing was said)"]
        return "\n".join(lines)

    def _decision(
        self, tk: Toolkit, module: str, result: ModuleResult, choice: Choice, view_text: str
    ) -> AgentDecision:
        # Copies: the decision's record is fixed here, whatever later touches the toolkit.
        calls = [c.model_copy(deep=True) for c in tk.calls]
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
            harness_built=result.harness_built,
            infrastructure=infra,
            calls=calls,
            spec=self.spec.model_dump(),
            view_text=view_text,
            deferral=result.deferral,
        )
