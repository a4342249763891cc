"""The memory interface."""

from __future__ import annotations

from typing import Protocol

from controller.observation import Observation


class Memory(Protocol):
    """What an agent remembers and how it is shown to the model."""

    def observe(self, obs: Observation) -> None:
        """Take in a new observation (chat, sightings, bodies)."""
        ...

    def record(self, step: int, module: str, summary: str) -> None:
        """Remember what the agent decided at a step."""
        ...

    def note(self, step: int, text: str) -> None:
        """Remember a free-form fact (a surveillance result, a deferred kill, an insight)."""
        ...

    def adjust(self, player: str, delta: float, why: str) -> None:
        """Change the suspicion of a player (clamped to 0..1)."""
        ...

    def suspicion(self) -> dict[str, float]:
        """Current suspicion per player (0 = trusted, 1 = certain impostor)."""
        ...

    def text(self) -> str:
        """The memory as prompt text."""
        ...
