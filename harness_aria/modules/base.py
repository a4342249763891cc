"""The decision-module interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness_aria.toolkit import Choice, Toolkit


@dataclass
class ModuleResult:
    """A module's output: the program actions (whitelisted primitives) and why."""

    actions: list[dict[str, Any]] = field(default_factory=list)
    vote: str | None = None
    reasoning: str = ""
    narration: str = ""
    invalid: str = ""
    """Why the model's answer could not be used (the agent then stands still)."""
    memo: str = ""
    """What to remember of this step."""


class Module(Protocol):
    """A model decision plus the program synthesis that carries it out."""

    name: str

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """Decide and synthesise the program."""
        ...


def failed(tk: Toolkit, what: str) -> ModuleResult:
    """The result when the model's answer was unusable: recorded, never replaced."""
    return ModuleResult(invalid=tk.last_error() or what, memo=f"no decision ({what})")


def text(answer: dict[str, Any], key: str) -> str:
    """A string field of an answer ('' if missing or not a string)."""
    value = answer.get(key)
    return value.strip() if isinstance(value, str) else ""


def name_of(answer: dict[str, Any], key: str, allowed: list[str]) -> str | None:
    """A player/room name field matched case-insensitively against `allowed`."""
    value = text(answer, key).lower()
    for item in allowed:
        if item.lower() == value:
            return item
    return None
