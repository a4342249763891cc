"""Turn a map into the blocks that build it in Minecraft.

`build_blocks` is a pure function of the spec: the same map always gives the
same, sorted list, so a build can be hashed, diffed and replayed. It assumes the
space above the floor is air (a flat or void world).
"""

from __future__ import annotations

import functools

from world.shapes import BlockPlacement
from world.spec import Cell, MapSpec, wall_cells

STATION_BLOCK = "emerald_block"
"""Floor block of every task station cell."""
BUTTON_BLOCK = "redstone_block"
"""Floor block of the emergency button cell."""

PLAYER_COLORS = (
    "white",
    "orange",
    "magenta",
    "light_blue",
    "yellow",
    "lime",
    "green",
    "pink",
    "gray",
    "light_gray",
    "cyan",
    "purple",
    "blue",
    "brown",
    "red",
    "black",
)
"""Colours a player (and so a body marker) may have: Minecraft's 16 dye colours."""


def marker_block(color: str) -> str:
    """The carpet block that marks the body of a player of this colour.

    Args:
        color: A player colour such as `red` or `light_blue`.

    Returns:
        The block name, e.g. `red_carpet`.

    Raises:
        ValueError: not one of `PLAYER_COLORS`.
    """
    if color not in PLAYER_COLORS:
        raise ValueError(f"no carpet for colour '{color}'; use one of: {', '.join(PLAYER_COLORS)}")
    return f"{color}_carpet"


def _floor_palette(spec: MapSpec) -> dict[Cell, str]:
    floors: dict[Cell, str] = {}
    # Rooms win over corridors; among corridors the first listed wins.
    for corridor in reversed(spec.corridors):
        for cell in corridor.rect.cells():
            floors[cell] = corridor.floor
    for room in spec.rooms:
        for cell in room.rect.cells():
            floors[cell] = room.floor
    for station in spec.stations:
        floors[station.cell] = STATION_BLOCK
    floors[spec.emergency_button] = BUTTON_BLOCK
    return floors


def _wall_palette(spec: MapSpec, cells: set[Cell]) -> dict[Cell, str]:
    walls: dict[Cell, str] = {}
    for corridor in reversed(spec.corridors):
        for cell in corridor.rect.ring():
            if cell in cells:
                walls[cell] = corridor.wall
    # A wall cell in a room's ring belongs to that room (room rings never overlap).
    for room in spec.rooms:
        for cell in room.rect.ring():
            if cell in cells:
                walls[cell] = room.wall
    return walls


def _place_blocks(spec: MapSpec) -> list[BlockPlacement]:
    """All blocks of the ship and the ghost area, sorted by (y, z, x).

    * Every walkable cell gets a floor block at `floor_y`: its room's floor, or
      the corridor floor outside rooms; station cells are `emerald_block` and the
      button cell is `redstone_block`.
    * Every wall cell gets a column of its room's wall block (the corridor wall
      where the cell belongs to no room) from `floor_y` (a foundation flush with
      the floor) up to `floor_y + wall_height`.
    * The ghost area gets its floor, a wall ring of the same height and a ceiling
      one block above the walls covering walls and floor, so it is sealed.

    Args:
        spec: A validated map.

    Returns:
        One placement per block position, deterministic for a given spec.
    """
    y0 = spec.floor_y
    top = y0 + spec.wall_height
    placed: dict[tuple[int, int, int], str] = {}

    floors = _floor_palette(spec)
    for (x, z), block in floors.items():
        placed[(x, y0, z)] = block
    walls = wall_cells(set(floors))
    for (x, z), block in _wall_palette(spec, walls).items():
        for y in range(y0, top + 1):
            placed[(x, y, z)] = block

    ghost = spec.ghost_area
    for x, z in ghost.cells():
        placed[(x, y0, z)] = spec.ghost_floor
    for x, z in ghost.ring():
        for y in range(y0, top + 1):
            placed[(x, y, z)] = spec.ghost_wall
    for x, z in ghost.expanded(1).cells():
        placed[(x, top + 1, z)] = spec.ghost_ceiling

    order = sorted(placed, key=lambda pos: (pos[1], pos[2], pos[0]))
    return [BlockPlacement(x=x, y=y, z=z, block=placed[(x, y, z)]) for x, y, z in order]


@functools.lru_cache(maxsize=8)
def _placed_blocks(spec: MapSpec) -> tuple[BlockPlacement, ...]:
    """The blocks of `spec`, placed once per map and process (every game starts by
    building its map; the placements are immutable)."""
    return tuple(_place_blocks(spec))


def build_blocks(spec: MapSpec) -> list[BlockPlacement]:
    """All blocks of the ship and the ghost area, sorted by (y, z, x) (`_place_blocks`):
    a new list each call, of the placements computed once per map and process.

    Args:
        spec: A validated map.

    Returns:
        One placement per block position, deterministic for a given spec.
    """
    try:
        return list(_placed_blocks(spec))
    except TypeError:  # a map that cannot be a cache key (unhashable): placed here
        return _place_blocks(spec)
