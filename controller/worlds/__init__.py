"""Worlds the step loop can drive: the real Minecraft world and an in-process fake."""

from controller.worlds.base import Seat, World, WorldEvent, WorldFault

__all__ = ["Seat", "World", "WorldEvent", "WorldFault"]
