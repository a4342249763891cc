"""The planner interface: pick this step's module."""

from __future__ import annotations

from typing import Any, Protocol

from harness_aria.modules.base import name_of, text
from harness_aria.toolkit import Choice, Toolkit


class Planner(Protocol):
    """Chooses one of the allowed modules each free-roam step."""

    plan_text: str

    async def choose(self, tk: Toolkit, allowed: list[str]) -> Choice | None:
        """The choice, or None when the model's answer was unusable."""
        ...


def parse_choice(answer: dict[str, Any], allowed: list[str]) -> Choice | None:
    """A Choice from a planner answer, or None if it names no allowed module."""
    module = name_of(answer, "module", allowed)
    if module is None:
        return None
    target = answer.get("target")
    return Choice(
        module=module,
        target=str(target) if target not in (None, "", "null") else None,
        reasoning=text(answer, "reasoning"),
        intent=text(answer, "intent"),
        plan=text(answer, "plan"),
    )
