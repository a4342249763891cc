"""Reflection off: nothing is learnt (a memory that takes the model's belief updates
still gets its update after each meeting)."""

from __future__ import annotations

from harness_aria.reflection.base import register_reflector
from harness_aria.reflection.beliefs import update_beliefs
from harness_aria.toolkit import Toolkit


@register_reflector("off")
class NoReflection:
    """The `off` setting."""

    def skills_text(self) -> str:
        """No skills."""
        return ""

    async def after_meeting(self, tk: Toolkit, recap: str) -> None:
        """No reflection; the model's belief update where the memory takes one
        (`belief_update: llm`, `harness_aria.reflection.beliefs`)."""
        await update_beliefs(tk)

    def succeeded(self, situation: str, behavior: str, outcome: str) -> None:
        """No skill memory."""
