"""Whole games on the fake world from a placed scene: who stands where, facing where.

`PlacedWorld` is the in-process fake world whose `start` puts the named seats where a
test says instead of at the meeting table (the rest keep their seats), so the first
step of a game begins from a known scene. `Still` is a seat that stands where it is,
facing where it faces, and answers every meeting with an abstention, so that only the
agents under test move.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from controller.actions import Wait
from controller.agents.base import AgentDecision
from controller.events import Vec3
from controller.observation import Observation
from controller.protocol import BlockPlacement, PlayerPose
from controller.worlds.base import Seat
from controller.worlds.fake import FakeWorld
from world.geometry import ShipGeometry


class PlacedWorld(FakeWorld):
    """The fake world, with some seats placed by the test.

    Args:
        geometry: The map.
        places: Seat -> (position, yaw) where it starts; seats not named keep theirs.
            May be filled after construction, before the game starts.
    """

    def __init__(
        self, geometry: ShipGeometry, places: Mapping[str, tuple[Vec3, float]] | None = None
    ) -> None:
        super().__init__(geometry)
        self.places: dict[str, tuple[Vec3, float]] = dict(places or {})

    def start(
        self,
        blocks: list[BlockPlacement],
        seats: list[Seat],
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, PlayerPose]:
        """Place every seat, the named ones where the test says."""
        placed = [
            replace(s, pos=self.places[s.agent][0], yaw=self.places[s.agent][1])
            if s.agent in self.places
            else s
            for s in seats
        ]
        return super().start(blocks, placed)


class Still:
    """A seat that stands still every free-roam step and abstains at every vote.

    Args:
        agent_id: The seat.
        ticks: How long each step's wait lasts.
    """

    def __init__(self, agent_id: str, ticks: int = 100) -> None:
        self.agent_id = agent_id
        self.ticks = ticks

    def describe(self) -> dict[str, Any]:
        """The record's description of the seat."""
        return {"kind": "still"}

    async def decide(self, obs: Observation) -> AgentDecision:
        """Wait in free roam, pass a meeting turn, abstain at the vote."""
        if obs.phase == "voting":
            return AgentDecision(abstain=True, module="VOTE")
        if obs.phase == "meeting":
            return AgentDecision(module="MEETING")
        return AgentDecision(program=[Wait(ticks=self.ticks)], module="WAIT")
