"""Worlds the step loop can drive: the real Minecraft world and an in-process fake."""

from controller.worlds.base import Frame, Seat, World, WorldEvent, WorldFault

__all__ = ["Frame", "Seat", "World", "WorldEvent", "WorldFault"]
