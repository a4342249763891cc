"""EMERGENCY: the model decides whether to press the button."""

from __future__ import annotations

from controller.actions import PressButton, Wait
from controller.observation import Observation
from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.modules.registry import register_module
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit


def offered(obs: Observation, spec: AriaSpec) -> bool:
    """Offered while the agent may press the button (its uses left, no lockout)."""
    return obs.emergency_ready


@register_module("EMERGENCY", budgets={"emergency": (0.2, 256)}, offered=offered, rank=30, number=3)
class EmergencyModule:
    """Press the emergency button, or not."""

    name = "EMERGENCY"

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Ask, then walk to the button and press it."""
        if not tk.obs.emergency_ready:
            return ModuleResult(
                invalid="EMERGENCY chosen but the button is not available",
                memo="button not available",
            )
        if tk.spec.module_calls == "needed":
            # The planner's EMERGENCY is the decision to call: no second question.
            return ModuleResult(
                actions=[PressButton()],
                reasoning=choice.reasoning,
                narration=choice.intent,
                memo="called an emergency meeting",
            )
        role = "impostor" if tk.impostor else "crewmate"
        answer = await tk.ask("emergency", tk.prompt(f"emergency_{role}"), image=True)
        if answer is None:
            return failed(tk, "emergency")
        read = reader(tk, answer)
        reasoning, intent = read.text("reasoning"), read.text("intent")
        call = read.flag("should_call")
        if call == "unknown":
            return ModuleResult(
                invalid=f"emergency answer: should_call={answer.get('should_call')!r} is not "
                "a clear yes or no",
                memo="no decision (emergency)",
            )
        if call == "yes":
            return ModuleResult(
                actions=[PressButton()],
                reasoning=reasoning,
                narration=intent,
                memo="called an emergency meeting",
            )
        return ModuleResult(
            actions=[Wait(ticks=10)],
            reasoning=reasoning,
            narration=intent,
            memo="decided not to call a meeting",
        )
