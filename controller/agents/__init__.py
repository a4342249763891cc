"""Agents that play: the interface and the scripted control agents."""

from controller.agents.base import Agent, AgentDecision
from controller.agents.scripted import ScriptedAgent

__all__ = ["Agent", "AgentDecision", "ScriptedAgent"]
