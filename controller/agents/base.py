"""The agent interface the step loop talks to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.observation import Observation


@dataclass(frozen=True)
class AgentDecision:
    """An agent's answer for one step.

    `program` is untrusted data (a list of action dicts) that the controller
    parses and validates; `vote` is a player id or `skip` (voting phase only).
    """

    program: Any = field(default_factory=list)
    vote: str | None = None
    module: str = ""
    raw: str = ""
    reasoning: str = ""
    narration: str = ""


class Agent(Protocol):
    """Decides from observations. All agents of a step are asked concurrently."""

    agent_id: str

    async def decide(self, obs: Observation) -> AgentDecision:
        """Return this step's decision for the observation's phase."""
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-able description of the agent (kind, settings) for the game record."""
        ...
