"""Builder: the blocks of every packaged ship are deterministic, complete and sealed where
needed."""

from __future__ import annotations

from collections import Counter

import pytest

from controller.protocol import BlockPlacement
from world.builder import (
    BUTTON_BLOCK,
    PLAYER_COLORS,
    STATION_BLOCK,
    build_blocks,
    marker_block,
)
from world.geometry import ShipGeometry
from world.spec import WORLD_LIMIT, MapSpec, load_map, packaged_maps

MAX_BLOCKS = 40_000


@pytest.fixture(scope="module", params=packaged_maps())
def ship(request: pytest.FixtureRequest) -> MapSpec:
    """Each packaged map in turn (`world/maps/*.yaml`)."""
    return load_map(str(request.param))


@pytest.fixture(scope="module")
def ship_geometry(ship: MapSpec) -> ShipGeometry:
    return ShipGeometry(ship)


@pytest.fixture(scope="module")
def blocks(ship: MapSpec) -> list[BlockPlacement]:
    return build_blocks(ship)


@pytest.fixture(scope="module")
def at(blocks: list[BlockPlacement]) -> dict[tuple[int, int, int], str]:
    return {(b.x, b.y, b.z): b.block for b in blocks}


def test_deterministic_and_sorted(ship: MapSpec, blocks: list[BlockPlacement]) -> None:
    assert build_blocks(ship) == blocks
    assert build_blocks(load_map(ship.name)) == blocks
    keys = [(b.y, b.z, b.x) for b in blocks]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)  # one block per position


def test_block_count(blocks: list[BlockPlacement]) -> None:
    assert 0 < len(blocks) < MAX_BLOCKS


def test_inside_the_loaded_area(blocks: list[BlockPlacement]) -> None:
    assert all(abs(b.x) <= WORLD_LIMIT and abs(b.z) <= WORLD_LIMIT for b in blocks)


def test_stations_and_button(ship: MapSpec, at: dict[tuple[int, int, int], str]) -> None:
    y = ship.floor_y
    for station in ship.stations:
        x, z = station.cell
        assert at[(x, y, z)] == STATION_BLOCK
    bx, bz = ship.emergency_button
    assert at[(bx, y, bz)] == BUTTON_BLOCK
    floor = Counter(block for (_, by, _), block in at.items() if by == y)
    assert floor[STATION_BLOCK] == len(ship.stations)
    assert floor[BUTTON_BLOCK] == 1


def test_floors_use_room_and_corridor_palettes(
    ship: MapSpec, ship_geometry: ShipGeometry, at: dict[tuple[int, int, int], str]
) -> None:
    y = ship.floor_y
    special = {s.cell for s in ship.stations} | {ship.emergency_button}
    corridor_floor = ship.corridors[0].floor
    for room in ship.rooms:
        for x, z in room.rect.cells():
            if (x, z) not in special:
                assert at[(x, y, z)] == room.floor, room.name
    for x, z in ship_geometry.walkable_cells_in("hallway"):
        assert at[(x, y, z)] == corridor_floor


def test_walkable_cells_are_open(
    ship: MapSpec, ship_geometry: ShipGeometry, at: dict[tuple[int, int, int], str]
) -> None:
    y = ship.floor_y
    for name in (*ship_geometry.rooms, "hallway", "ghost_area"):
        for x, z in ship_geometry.walkable_cells_in(name):
            assert (x, y, z) in at
            for h in range(1, ship.wall_height + 1):
                assert (x, y + h, z) not in at


def test_wall_columns(
    ship: MapSpec, ship_geometry: ShipGeometry, at: dict[tuple[int, int, int], str]
) -> None:
    y, top = ship.floor_y, ship.floor_y + ship.wall_height
    ring_owner = {cell: room for room in ship.rooms for cell in room.rect.ring()}
    x0, z0, x1, z1 = ship_geometry.bounds
    walls = 0
    for x in range(x0, x1 + 1):
        for z in range(z0, z1 + 1):
            if not ship_geometry.is_wall((x, z)) or ship.ghost_area.expanded(1).contains((x, z)):
                continue
            walls += 1
            column = {at.get((x, h, z)) for h in range(y, top + 1)}
            assert len(column) == 1 and None not in column, (x, z)
            (block,) = column
            room = ring_owner.get((x, z))
            expected = room.wall if room else ship.corridors[0].wall
            assert block == expected, (x, z)
            assert (x, top + 1, z) not in at  # no ceiling over the ship
    assert walls > 0


def test_ghost_area_is_sealed(ship: MapSpec, at: dict[tuple[int, int, int], str]) -> None:
    y, top = ship.floor_y, ship.floor_y + ship.wall_height
    ghost = ship.ghost_area
    for x, z in ghost.cells():
        assert at[(x, y, z)] == ship.ghost_floor
        assert all((x, h, z) not in at for h in range(y + 1, top + 1))
    for x, z in ghost.ring():
        assert all(at[(x, h, z)] == ship.ghost_wall for h in range(y, top + 1))
    for x, z in ghost.expanded(1).cells():
        assert at[(x, top + 1, z)] == ship.ghost_ceiling


def test_tiny_map_builds(tiny: MapSpec) -> None:
    blocks = build_blocks(tiny)
    at = {(b.x, b.y, b.z): b.block for b in blocks}
    assert at[(10, 64, 2)] == "smooth_stone"  # corridor
    assert at[(9, 64, 2)] == "smooth_stone"  # door cut through the cafeteria wall
    assert at[(9, 65, 4)] == "white_concrete"  # cafeteria wall next to the door
    assert at[(10, 65, 0)] == "stone_bricks"  # corridor wall outside both rooms
    assert at[(11, 65, 0)] == "brown_concrete"  # storage wall
    assert at[(1, 64, 7)] == STATION_BLOCK
    assert at[(4, 64, 4)] == BUTTON_BLOCK


def test_marker_block() -> None:
    for color in ("red", "blue", "green", "pink", "orange", "yellow", "black", "white"):
        assert marker_block(color) == f"{color}_carpet"
    assert marker_block("light_blue") == "light_blue_carpet"
    assert len(PLAYER_COLORS) == 16
    with pytest.raises(ValueError, match="no carpet for colour 'teal'"):
        marker_block("teal")
