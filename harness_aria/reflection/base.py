"""Reflection and skill memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness_aria.toolkit import Toolkit


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
