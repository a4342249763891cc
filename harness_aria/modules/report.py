"""REPORT: a body in sight; the model decides whether to report it."""

from __future__ import annotations

import math

from controller.actions import GoTo, ReportBody
from controller.observation import Observation
from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.modules.registry import register_module
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit


def offered(obs: Observation, spec: AriaSpec) -> bool:
    """Offered with a body in sight (the filtered observation: an ego agent's only in
    its field of view)."""
    return bool(obs.visible_bodies)


@register_module("REPORT", budgets={"report": (0.2, 256)}, offered=offered, rank=20, number=1)
class ReportModule:
    """Report a body (or, for an impostor, decide to walk away)."""

    name = "REPORT"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask, then go to the body and report, or walk away."""
        obs = tk.obs
        bodies = obs.visible_bodies
        if not bodies:
            return ModuleResult(
                invalid="REPORT chosen but no body is in sight", memo="no body to report"
            )
        named = bool(choice.target and choice.target.lower() in bodies)
        victim = (
            choice.target.lower()
            if named and choice.target
            else min(bodies, key=lambda v: math.dist(obs.pos, bodies[v]))
        )
        if tk.spec.module_calls == "needed":
            # The planner's REPORT is the decision to report (an impostor that would
            # rather walk away chooses MOVE): no second question.
            return ModuleResult(
                actions=[ReportBody(body=victim)],
                reasoning=choice.reasoning,
                narration=choice.intent,
                memo=f"reported {victim}'s body",
                harness_built=not named,
            )
        role = "impostor" if tk.impostor else "crewmate"
        answer = await tk.ask("report", tk.prompt(f"report_{role}"), image=True, victim=victim)
        if answer is None:
            return failed(tk, "report")
        read = reader(tk, answer)
        reasoning, intent = read.text("reasoning"), read.text("intent")
        report = read.flag("should_report")
        if report == "unknown":
            # Never read an unclear answer as "no": that walks a crewmate away from a body.
            return ModuleResult(
                invalid=f"report answer: should_report={answer.get('should_report')!r} is not "
                "a clear yes or no",
                memo="no decision (report)",
            )
        if report == "yes":
            return ModuleResult(
                actions=[ReportBody(body=victim)],
                reasoning=reasoning,
                narration=intent,
                memo=f"reported {victim}'s body",
                harness_built=not named,
            )
        far = max(
            tk.geometry.rooms, key=lambda r: math.dist(tk.geometry.room_center(r), bodies[victim])
        )
        return ModuleResult(
            actions=[GoTo(room=far)],
            reasoning=reasoning,
            narration=intent,
            memo=f"did not report {victim}'s body",
        )
