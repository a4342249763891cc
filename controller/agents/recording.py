"""An agent wrapper that keeps every observation its agent was given."""

from __future__ import annotations

from typing import Any

from controller.agents.base import Agent, AgentDecision
from controller.observation import Observation


class RecordingAgent:
    """Delegates to another agent and keeps the observations (for checks and analysis).

    Args:
        inner: The agent that decides.
    """

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.agent_id = inner.agent_id
        self.seen: list[Observation] = []

    def describe(self) -> dict[str, Any]:
        """The inner agent's description."""
        return self.inner.describe()

    async def decide(self, obs: Observation) -> AgentDecision:
        """Keep the observation, then let the inner agent decide."""
        self.seen.append(obs)
        return await self.inner.decide(obs)
