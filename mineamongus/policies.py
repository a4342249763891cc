"""Policies over the environment: the built-in agents, and a random masked one.

An agent of the controller (`controller.agents.base.Agent`: scripted, ARIA, your own)
maps an `Observation` to an `AgentDecision`; over the environment it is a policy that
reads the seat's observation as the step loop built it (`env.last_observation`) and
answers with its decision, which `env.step` takes as the seat's action. The game then
goes exactly as if the agent had been seated in the loop itself.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from controller.agents.base import Agent, AgentDecision


class SeatEnv(Protocol):
    """What the policies need of the environment (`MineAmongUsEnv`)."""

    def last_observation(self, agent: str) -> Any:
        """The seat's observation as the step loop built it."""
        ...


class AgentPolicy:
    """A controller agent as a policy over the environment.

    Args:
        agent: The agent (it keeps its own memory between steps, as in the loop).
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        # One event loop for the agent's life: model clients bind connections to it.
        self._loop = asyncio.new_event_loop()

    def act(self, env: SeatEnv, seat: str) -> AgentDecision:
        """The agent's decision on the seat's latest observation (call it only for the
        seats asked this step: an agent expects every observation it is given to be
        one it decides on)."""
        return self._loop.run_until_complete(self.agent.decide(env.last_observation(seat)))

    def close(self) -> None:
        """Close the agent's event loop."""
        self._loop.close()


def random_action(env: Any, seat: str, info: dict[str, Any]) -> dict[str, Any]:
    """An action drawn uniformly from what the seat's action mask allows now."""
    action: dict[str, Any] = env.action_space(seat).sample(mask=info["action_mask"])
    return action
