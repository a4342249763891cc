"""EMERGENCY: the model decides whether to press the button."""

from __future__ import annotations

from harness_aria.modules.base import ModuleResult, failed, text
from harness_aria.toolkit import Choice, Toolkit


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
        role = "impostor" if tk.impostor else "crewmate"
        answer = await tk.ask("emergency", tk.prompt(f"emergency_{role}"), image=True)
        if answer is None:
            return failed(tk, "emergency")
        reasoning, intent = text(answer, "reasoning"), text(answer, "intent")
        if answer.get("should_call") is True:
            return ModuleResult(
                actions=[{"op": "press_button"}],
                reasoning=reasoning,
                narration=intent,
                memo="called an emergency meeting",
            )
        return ModuleResult(
            actions=[{"op": "wait", "ticks": 10}],
            reasoning=reasoning,
            narration=intent,
            memo="decided not to call a meeting",
        )
