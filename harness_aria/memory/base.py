"""The memory interface."""

from __future__ import annotations

from typing import Protocol

from controller.observation import Observation, OwnAction


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


def describe_action(a: OwnAction) -> str:
    """One of the agent's own actions in its own words (what memory records)."""
    where = f" in {a.room}" if a.room else ""
    station = f"station {a.station}"
    detail = f" ({a.detail})" if a.detail else ""
    if a.kind == "moved":
        return f"I walked{where}{detail}"
    if a.kind == "task_started":
        return f"I started the task at {station}{where}"
    if a.kind == "task_done":
        return f"I finished the task at {station}{where}"
    if a.kind == "task_interrupted":
        return f"my task at {station} was interrupted, not finished{detail}"
    if a.kind == "killed":
        return f"I killed {a.target}{where}"
    if a.kind == "reported":
        return f"I reported {a.target}'s body{where}"
    if a.kind == "pressed_button":
        return "I pressed the emergency button"
    if a.kind == "spoke":
        return f"I said{detail}"
    if a.kind == "voted":
        return f"I voted {a.target or 'to abstain'}"
    return f"my program ended{detail}"
