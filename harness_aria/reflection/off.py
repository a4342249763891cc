"""Reflection off: nothing is learnt."""

from __future__ import annotations

from harness_aria.reflection.base import register_reflector
from harness_aria.toolkit import Toolkit


@register_reflector("off")
class NoReflection:
    """The `off` setting."""

    def skills_text(self) -> str:
        """No skills."""
        return ""

    async def after_meeting(self, tk: Toolkit, recap: str) -> None:
        """No reflection."""

    def succeeded(self, situation: str, behavior: str, outcome: str) -> None:
        """No skill memory."""
