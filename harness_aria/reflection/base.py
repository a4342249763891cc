"""Reflection and skill memory; reflectors registered by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from harness_aria.spec import AriaSpec, Catalogue
from harness_aria.toolkit import Budget, Toolkit, register_budgets


@dataclass(frozen=True)
class Skill:
    """Something that worked: in which situation, what was done, what it achieved."""

    source: str
    situation: str
    behavior: str
    outcome: str


class Reflector(Protocol):
    """Learns from meetings and from programs that achieved their aim."""

    def skills_text(self) -> str:
        """The last skills, as prompt text (empty when reflection is off)."""
        ...

    async def after_meeting(self, tk: Toolkit, recap: str) -> None:
        """Reflect on the meeting that just ended.

        Args:
            tk: The decision's toolkit.
            recap: That meeting's whole chat, its votes and its outcome, as text.
        """
        ...

    def succeeded(self, situation: str, behavior: str, outcome: str) -> None:
        """Remember a program that achieved its aim."""
        ...


REFLECTORS: Catalogue[Reflector] = Catalogue("reflection")
"""The reflectors by `AriaSpec.reflection` value (`register_reflector`);
`REFLECTORS.build(spec)` makes the spec's."""

_R = TypeVar("_R", bound=type)


def register_reflector(
    name: str,
    *,
    budgets: Mapping[str, Budget] | None = None,
    args: Callable[[AriaSpec], dict[str, Any]] | None = None,
) -> Callable[[_R], _R]:
    """A class decorator registering a reflector under its `AriaSpec.reflection` value.

    Args:
        name: The spec value that selects it.
        budgets: (temperature, max_tokens) of each call purpose it asks under (none if
            it asks nothing).
        args: Its constructor's keyword arguments, read from the spec.
    """

    def add(cls: _R) -> _R:
        register_budgets(f"reflector {name!r}", budgets or {})
        REFLECTORS.register(name, cast(Callable[..., Reflector], cls), args)
        return cls

    return add
