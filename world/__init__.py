"""The ship: map specs, their geometry and the blocks that build them.

Typical use::

    from world import ShipGeometry, build_blocks, load_map

    spec = load_map("skeld")
    geometry = ShipGeometry(spec)
    blocks = build_blocks(spec)
"""

from world.builder import BUTTON_BLOCK, PLAYER_COLORS, STATION_BLOCK, build_blocks, marker_block
from world.geometry import (
    GHOST_AREA,
    HALLWAY,
    OUTSIDE,
    DistanceField,
    ShipGeometry,
    cell_of,
    render_ascii,
    yaw_towards,
)
from world.spec import (
    WORLD_LIMIT,
    Cell,
    Corridor,
    MapSpec,
    MapSpecError,
    Rect,
    Room,
    Station,
    load_map,
    parse_map,
)

__all__ = [
    "BUTTON_BLOCK",
    "GHOST_AREA",
    "HALLWAY",
    "OUTSIDE",
    "PLAYER_COLORS",
    "STATION_BLOCK",
    "WORLD_LIMIT",
    "Cell",
    "Corridor",
    "DistanceField",
    "MapSpec",
    "MapSpecError",
    "Rect",
    "Room",
    "ShipGeometry",
    "Station",
    "build_blocks",
    "cell_of",
    "load_map",
    "marker_block",
    "parse_map",
    "render_ascii",
    "yaw_towards",
]
