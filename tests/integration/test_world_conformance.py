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


def test_frames_saved_under_a_relative_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    geometry = ShipGeometry(load_map("skeld"))
    world = MinecraftWorld(ServerConfig(), Path("logs"), geometry.seat_pos(0))
    try:
        world_conformance(world, geometry, frames=False)
        frames = world.render(["red"], Path("runs/x/frames/0001"), "jpg")
    finally:
        world.close()
    saved = Path(frames["red"].path or "")
    assert saved.is_absolute() and saved.is_file()
    assert saved == (tmp_path / "runs/x/frames/0001/red.jpg").resolve()
