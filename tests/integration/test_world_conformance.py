"""The real Minecraft world passes the same conformance check as the fake world."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.checks import world_conformance
from controller.config import ServerConfig
from controller.worlds.minecraft import MinecraftWorld
from world.geometry import ShipGeometry
from world.spec import load_map

pytestmark = pytest.mark.integration


def test_minecraft_world_conforms(tmp_path: Path) -> None:
    geometry = ShipGeometry(load_map("skeld"))
    world = MinecraftWorld(ServerConfig(), tmp_path / "logs", geometry.seat_pos(0))
    try:
        assert world_conformance(world, geometry) == []
    finally:
        world.close()
