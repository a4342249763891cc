"""Shapes the world package shares with its users (re-exported by `controller.protocol`).

They live here so that `world` depends on nothing of `controller`: the controller
builds on the world, not the other way round.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

Vec3 = tuple[float, float, float]
"""A Minecraft position `(x, y, z)` in blocks; y is the feet."""


class BlockPlacement(BaseModel):
    """One block to set: position and a Minecraft block name (e.g. `stone_bricks`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    x: int
    y: int
    z: int
    block: str
