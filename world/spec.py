"""Map specifications: the typed, validated description of a ship.

A map is written as YAML (see `world/maps/skeld.yaml`) and read through
`load_map`, which checks both the shape of every field (pydantic) and the
geometry of the whole ship (rooms apart, everything reachable, stations inside
their rooms, ...). Every failure is a `MapSpecError` whose message names the
offending room, corridor, station or field and says what to change.

Coordinates are Minecraft block coordinates. A *cell* `(x, z)` is one block
column; a `Rect` lists the interior (walkable) cells of a room, corridor or the
ghost area, both corners inclusive. The walls of a room are the ring of cells
just outside its rect. Corridors may overlap rooms' walls and interiors: that
is how doorways are cut.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.registry import Registry

Cell = tuple[int, int]
"""A block column `(x, z)`."""

WORLD_LIMIT = 60
"""Every block of a map (walls included) must satisfy |x| <= WORLD_LIMIT and |z| <= WORLD_LIMIT."""

MIN_SEATS = 8
"""A map must seat (and spawn) at least this many players."""

RESERVED_BLOCKS = frozenset({"emerald_block", "redstone_block"})
"""Blocks that mark task stations and the emergency button; no palette may use them."""

RESERVED_REGION_NAMES = frozenset({"hallway", "ghost_area", "outside"})
"""Names `ShipGeometry.room_at` returns for non-room cells; no room may take them."""

HALLWAY_ALIASES: dict[str, str] = {
    "corridor": "hallway",
    "corridors": "hallway",
    "hall": "hallway",
    "halls": "hallway",
    "hallways": "hallway",
}
"""Spoken names of the corridors (`room_at`'s `hallway`) on every map; no room alias may
take them."""

_NAME = r"^[a-z][a-z0-9_]*$"
_ALIAS = r"^[a-z0-9][a-z0-9_]*$"
_BLOCK = r"^[a-z][a-z0-9_]*$"


class MapSpecError(ValueError):
    """A map file or map dict is malformed or describes an impossible ship."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Rect(_Model):
    """An axis-aligned rectangle of cells, both corners inclusive."""

    x0: int
    """Smallest x of the rectangle's cells."""
    z0: int
    """Smallest z of the rectangle's cells."""
    x1: int
    """Largest x of the rectangle's cells (inclusive, >= x0)."""
    z1: int
    """Largest z of the rectangle's cells (inclusive, >= z0)."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.x0 > self.x1:
            raise ValueError(f"x0 ({self.x0}) must be <= x1 ({self.x1}); swap them")
        if self.z0 > self.z1:
            raise ValueError(f"z0 ({self.z0}) must be <= z1 ({self.z1}); swap them")
        return self

    @property
    def width(self) -> int:
        """Number of cells along x."""
        return self.x1 - self.x0 + 1

    @property
    def depth(self) -> int:
        """Number of cells along z."""
        return self.z1 - self.z0 + 1

    @property
    def area(self) -> int:
        """Number of cells."""
        return self.width * self.depth

    @property
    def center(self) -> tuple[float, float]:
        """The geometric centre `(x, z)` in block coordinates."""
        return ((self.x0 + self.x1 + 1) / 2.0, (self.z0 + self.z1 + 1) / 2.0)

    def contains(self, cell: Cell) -> bool:
        """Whether `cell` is one of the rectangle's cells."""
        x, z = cell
        return self.x0 <= x <= self.x1 and self.z0 <= z <= self.z1

    def expanded(self, by: int = 1) -> Rect:
        """The rectangle grown by `by` cells on every side (by=1 adds the wall ring)."""
        return Rect(x0=self.x0 - by, z0=self.z0 - by, x1=self.x1 + by, z1=self.z1 + by)

    def overlaps(self, other: Rect) -> bool:
        """Whether the two rectangles share at least one cell."""
        return not (
            self.x1 < other.x0 or other.x1 < self.x0 or self.z1 < other.z0 or other.z1 < self.z0
        )

    def cells(self) -> Iterator[Cell]:
        """All cells, row by row (z outer, x inner)."""
        for z in range(self.z0, self.z1 + 1):
            for x in range(self.x0, self.x1 + 1):
                yield (x, z)

    def ring(self) -> Iterator[Cell]:
        """The cells just outside the rectangle (its wall ring), in row order."""
        outer = self.expanded(1)
        for cell in outer.cells():
            if not self.contains(cell):
                yield cell

    def __str__(self) -> str:
        return f"x {self.x0}..{self.x1}, z {self.z0}..{self.z1}"


class Room(_Model):
    """A named room: a rectangle of floor surrounded by its own walls."""

    name: str = Field(pattern=_NAME)
    """Identifier used everywhere else (stations, prompts, `room_at`), e.g. `electrical`."""
    rect: Rect
    """Interior (walkable) cells; the walls are the ring of cells around it."""
    floor: str = Field(pattern=_BLOCK)
    """Minecraft block name of the floor, e.g. `yellow_terracotta`; unique to this room."""
    wall: str = Field(pattern=_BLOCK)
    """Minecraft block name of the walls, e.g. `gray_concrete`."""
    aliases: tuple[str, ...] = ()
    """Other names players use for the room (`elec`, `comms`), as spoken names are
    matched: lower case, words joined by `_` (`med_bay`), digits allowed (`02`). Unique
    across the map, never another room's name nor a corridor word (`HALLWAY_ALIASES`).
    The claim extractor maps them to `name`."""


class Corridor(_Model):
    """A walkable strip joining rooms; its rect may cut through room walls to make doors."""

    name: str = Field(pattern=_NAME)
    """Identifier used in error messages, e.g. `cafeteria_weapons`."""
    rect: Rect
    """Walkable cells; cells inside a room keep the room's floor and name."""
    floor: str = Field(pattern=_BLOCK)
    """Minecraft block name of the corridor floor."""
    wall: str = Field(pattern=_BLOCK)
    """Minecraft block name of corridor walls that belong to no room."""


class Station(_Model):
    """A task station: one cell of a room where a task is done."""

    id: int = Field(ge=0)
    """Station number; a map's stations are numbered 0..N-1."""
    name: str = Field(min_length=1, max_length=40)
    """Short human name shown to agents, e.g. `Fix wiring`; unique within the map."""
    room: str
    """Name of the room the station is in."""
    cell: Cell
    """The `(x, z)` cell a player stands on to do the task; inside the room's rect."""


class MapSpec(_Model):
    """A whole ship: rooms, corridors, stations, meeting area and ghost area.

    Constructing one runs every geometric check (see `load_map`); an instance is
    therefore always a playable map.
    """

    name: str = Field(pattern=_NAME)
    """Map identifier, e.g. `skeld`."""
    floor_y: int = Field(ge=-60, le=300)
    """y of the floor blocks; players stand at floor_y + 1."""
    wall_height: int = Field(ge=2, le=16)
    """Wall blocks above the floor; >= 2 so a standing player cannot see over them."""
    meeting_room: str
    """Name of the room holding the emergency button, the meeting seats and the spawns
    (the Skeld's is `cafeteria`). The old key `cafeteria` is still read, for maps and
    records written before the rename; new maps must use `meeting_room`."""
    rooms: tuple[Room, ...] = Field(min_length=1)
    """All rooms, in a fixed order (the order `ShipGeometry.rooms` reports)."""
    corridors: tuple[Corridor, ...] = ()
    """Walkable strips between rooms."""
    stations: tuple[Station, ...] = ()
    """Task stations, numbered 0..N-1."""
    emergency_button: Cell
    """Cell of the emergency button, inside the meeting room."""
    seats: tuple[Cell, ...]
    """Meeting seats around the button, inside the meeting room; seat i is also spawn i."""
    ghost_area: Rect
    """Interior of the sealed box where dead players wait; apart from the ship."""
    ghost_floor: str = Field(default="gray_wool", pattern=_BLOCK)
    """Floor block of the ghost area."""
    ghost_wall: str = Field(default="obsidian", pattern=_BLOCK)
    """Wall block of the ghost area."""
    ghost_ceiling: str = Field(default="sea_lantern", pattern=_BLOCK)
    """Ceiling block of the ghost area (a light source, so the box is not pitch dark)."""

    @model_validator(mode="before")
    @classmethod
    def _deprecated_cafeteria(cls, data: Any) -> Any:
        # `cafeteria` was the field's name before `meeting_room`: old map files and the
        # map specs recorded in old game logs still carry it.
        if isinstance(data, Mapping) and "cafeteria" in data:
            if "meeting_room" in data:
                raise ValueError(
                    "both `meeting_room` and `cafeteria` are given; `cafeteria` is the old "
                    "name of `meeting_room`: keep only `meeting_room`"
                )
            data = {k: v for k, v in data.items() if k != "cafeteria"} | {
                "meeting_room": data["cafeteria"]
            }
        return data

    @model_validator(mode="after")
    def _check_geometry(self) -> Self:
        _check_map(self)
        return self

    def room(self, name: str) -> Room:
        """The room called `name`.

        Raises:
            KeyError: no such room.
        """
        for room in self.rooms:
            if room.name == name:
                return room
        raise KeyError(name)

    def room_aliases(self) -> dict[str, str]:
        """Every room's aliases: spoken name -> room name (see `Room.aliases`)."""
        return {alias: room.name for room in self.rooms for alias in room.aliases}

    def walkable_cells(self) -> set[Cell]:
        """Every walkable cell of the ship (rooms and corridors; not the ghost area)."""
        cells: set[Cell] = set()
        for rect in [room.rect for room in self.rooms] + [c.rect for c in self.corridors]:
            cells.update(rect.cells())
        return cells


def wall_cells(walkable: set[Cell]) -> set[Cell]:
    """Non-walkable cells 8-adjacent to a walkable one: where wall columns stand."""
    walls: set[Cell] = set()
    for x, z in walkable:
        for dx in (-1, 0, 1):
            for dz in (-1, 0, 1):
                cell = (x + dx, z + dz)
                if cell not in walkable:
                    walls.add(cell)
    return walls


def _reachable(walkable: set[Cell], start: Iterable[Cell]) -> set[Cell]:
    # 4-connected flood fill. With no corner cutting, a diagonal step needs both
    # orthogonal neighbours free, so 8-connected reachability is the same set.
    seen = {cell for cell in start if cell in walkable}
    queue = deque(seen)
    while queue:
        x, z = queue.popleft()
        for cell in ((x + 1, z), (x - 1, z), (x, z + 1), (x, z - 1)):
            if cell in walkable and cell not in seen:
                seen.add(cell)
                queue.append(cell)
    return seen


def _fail(message: str) -> NoReturn:
    raise MapSpecError(message)


def _check_bounds(what: str, rect: Rect) -> None:
    outer = rect.expanded(1)
    lo, hi = -WORLD_LIMIT, WORLD_LIMIT
    if outer.x0 < lo or outer.z0 < lo or outer.x1 > hi or outer.z1 > hi:
        _fail(
            f"{what} ({rect}) with its walls ({outer}) leaves the allowed area "
            f"x, z in [{lo}, {hi}]; move or shrink it"
        )


def _check_names_and_palettes(spec: MapSpec) -> None:
    seen_rooms: set[str] = set()
    for room in spec.rooms:
        if room.name in RESERVED_REGION_NAMES:
            _fail(f"room '{room.name}' uses a reserved name; rename it")
        if room.name in seen_rooms:
            _fail(f"room '{room.name}' is defined twice; room names must be unique")
        seen_rooms.add(room.name)
    seen_corridors: set[str] = set()
    for corridor in spec.corridors:
        if corridor.name in seen_corridors:
            _fail(f"corridor '{corridor.name}' is defined twice; corridor names must be unique")
        seen_corridors.add(corridor.name)
    if spec.meeting_room not in seen_rooms:
        _fail(
            f"meeting_room '{spec.meeting_room}' is not a room; set `meeting_room` to one of: "
            f"{', '.join(room.name for room in spec.rooms)}"
        )
    _check_aliases(spec, seen_rooms)

    corridor_floors = {corridor.floor for corridor in spec.corridors}
    floor_owner: dict[str, str] = {}
    for room in spec.rooms:
        for block in (room.floor, room.wall):
            if block in RESERVED_BLOCKS:
                _fail(
                    f"room '{room.name}' uses {block}, reserved for stations/button; pick another"
                )
        if room.floor in floor_owner:
            _fail(
                f"room '{room.name}' has the same floor ({room.floor}) as room "
                f"'{floor_owner[room.floor]}'; every room needs its own floor block"
            )
        if room.floor in corridor_floors:
            _fail(f"room '{room.name}' has a corridor's floor ({room.floor}); pick another floor")
        floor_owner[room.floor] = room.name
    for corridor in spec.corridors:
        for block in (corridor.floor, corridor.wall):
            if block in RESERVED_BLOCKS:
                _fail(
                    f"corridor '{corridor.name}' uses {block}, reserved for stations/button; "
                    "pick another"
                )


def _check_aliases(spec: MapSpec, room_names: set[str]) -> None:
    owner: dict[str, str] = {}
    for room in spec.rooms:
        for alias in room.aliases:
            label = f"room '{room.name}': alias '{alias}'"
            if not re.fullmatch(_ALIAS, alias):
                _fail(
                    f"{label} is not a lowercase name; write it in lower case with words "
                    f"joined by '_' (a-z, 0-9, _), e.g. '{_alias_form(alias)}'"
                )
            if alias in room_names:
                what = "the room's own name" if alias == room.name else "another room's name"
                _fail(f"{label} is {what}; a room's name already matches, drop the alias")
            if alias in RESERVED_REGION_NAMES or alias in HALLWAY_ALIASES:
                _fail(f"{label} is a name for the corridors or a reserved region; drop it")
            if alias in owner:
                where = (
                    "listed twice"
                    if owner[alias] == room.name
                    else (f"also an alias of room '{owner[alias]}'")
                )
                _fail(f"{label} is {where}; an alias must name one room only once")
            owner[alias] = room.name


def _alias_form(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "name"


def _check_layout(spec: MapSpec) -> None:
    for room in spec.rooms:
        _check_bounds(f"room '{room.name}'", room.rect)
    for corridor in spec.corridors:
        _check_bounds(f"corridor '{corridor.name}'", corridor.rect)
    _check_bounds("the ghost area", spec.ghost_area)

    for i, first in enumerate(spec.rooms):
        for second in spec.rooms[i + 1 :]:
            if first.rect.expanded(1).overlaps(second.rect.expanded(1)):
                _fail(
                    f"room '{first.name}' ({first.rect}) and room '{second.name}' "
                    f"({second.rect}) overlap (walls included); leave at least the two "
                    "wall rings between them"
                )

    ghost = spec.ghost_area.expanded(1)
    for item, kind in [(r, "room") for r in spec.rooms] + [(c, "corridor") for c in spec.corridors]:
        if ghost.overlaps(item.rect.expanded(1)):
            _fail(
                f"the ghost area ({spec.ghost_area}) overlaps {kind} '{item.name}' "
                f"({item.rect}) (walls included); move the ghost area away from the ship"
            )
    needed = max(MIN_SEATS, len(spec.seats))
    if spec.ghost_area.area < needed:
        _fail(
            f"the ghost area ({spec.ghost_area}) has {spec.ghost_area.area} cells, fewer than "
            f"the {needed} players it must hold; enlarge it"
        )
    for block in (spec.ghost_floor, spec.ghost_wall, spec.ghost_ceiling):
        if block in RESERVED_BLOCKS:
            _fail(f"the ghost area uses {block}, reserved for stations/button; pick another")


def _check_reachability(spec: MapSpec, walkable: set[Cell]) -> set[Cell]:
    meeting = spec.room(spec.meeting_room)
    reached = _reachable(walkable, meeting.rect.cells())
    for room in spec.rooms:
        if not any(cell in reached for cell in room.rect.cells()):
            _fail(
                f"room '{room.name}' ({room.rect}) cannot be reached from the meeting room "
                f"'{spec.meeting_room}'; add a corridor whose rect cuts through its wall"
            )
    for corridor in spec.corridors:
        if not any(cell in reached for cell in corridor.rect.cells()):
            _fail(
                f"corridor '{corridor.name}' ({corridor.rect}) is not connected to the rest "
                "of the ship; extend it into a room or another corridor"
            )
    return reached


def _check_stations(spec: MapSpec, walkable: set[Cell], reached: set[Cell]) -> None:
    rooms = {room.name: room for room in spec.rooms}
    ids = [station.id for station in spec.stations]
    cells: dict[Cell, int] = {}
    names: dict[str, int] = {}
    for station in spec.stations:
        label = f"station {station.id} ('{station.name}')"
        if ids.count(station.id) > 1:
            _fail(f"{label}: station id {station.id} is used more than once; ids must be unique")
        if station.id >= len(spec.stations):
            _fail(
                f"{label}: ids must be 0..{len(spec.stations) - 1} (one per station); "
                f"renumber id {station.id}"
            )
        key = station.name.casefold()
        if key in names:
            _fail(f"{label}: station {names[key]} already has this name; names must be unique")
        names[key] = station.id
        room = rooms.get(station.room)
        if room is None:
            _fail(
                f"{label} refers to unknown room '{station.room}'; use one of: {', '.join(rooms)}"
            )
        if not room.rect.contains(station.cell):
            _fail(
                f"{label}: cell {station.cell} is outside its room '{room.name}' "
                f"({room.rect}); move the cell inside the room"
            )
        if station.cell not in walkable:
            _fail(f"{label}: cell {station.cell} is not walkable; move it onto the floor")
        if station.cell not in reached:
            _fail(f"{label}: cell {station.cell} cannot be reached from the meeting room")
        if station.cell in cells:
            _fail(f"{label}: cell {station.cell} already holds station {cells[station.cell]}")
        cells[station.cell] = station.id
        if station.cell == spec.emergency_button:
            _fail(f"{label}: cell {station.cell} is the emergency button; move the station")
        if station.cell in spec.seats:
            _fail(f"{label}: cell {station.cell} is a meeting seat; move the station")


def _check_meeting(spec: MapSpec) -> None:
    meeting = spec.room(spec.meeting_room)
    if not meeting.rect.contains(spec.emergency_button):
        _fail(
            f"emergency button {spec.emergency_button} is not inside the meeting room "
            f"'{meeting.name}' ({meeting.rect}); move it into the meeting room"
        )
    if len(spec.seats) < MIN_SEATS:
        _fail(
            f"only {len(spec.seats)} seats in the meeting room '{meeting.name}'; "
            f"add seats until there are at least {MIN_SEATS}"
        )
    seen: set[Cell] = set()
    for i, seat in enumerate(spec.seats):
        if not meeting.rect.contains(seat):
            _fail(
                f"seat {i} {seat} is not inside the meeting room '{meeting.name}' "
                f"({meeting.rect}); move it into the meeting room"
            )
        if seat == spec.emergency_button:
            _fail(f"seat {i} {seat} is on the emergency button; move it around the button")
        if seat in seen:
            _fail(f"seat {i} {seat} is listed twice; seats must be distinct cells")
        seen.add(seat)


def _check_map(spec: MapSpec) -> None:
    """Run every geometric check on a structurally valid spec.

    Raises:
        MapSpecError: naming the first offending room, corridor, station or seat.
    """
    _check_names_and_palettes(spec)
    _check_layout(spec)
    _check_meeting(spec)
    walkable = spec.walkable_cells()
    reached = _check_reachability(spec, walkable)
    _check_stations(spec, walkable, reached)


def _describe_location(data: Mapping[str, Any], loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    node: Any = data
    for key in loc:
        if isinstance(key, int):
            parts.append(f"[{key}]")
            node = node[key] if isinstance(node, list) and 0 <= key < len(node) else None
            if isinstance(node, Mapping):
                label = node.get("name", node.get("id"))
                if label is not None:
                    parts.append(f" ({label!r})")
        else:
            parts.append(f".{key}" if parts else key)
            node = node.get(key) if isinstance(node, Mapping) else None
    return "".join(parts)


def _format_validation_error(error: ValidationError, data: Mapping[str, Any], source: str) -> str:
    lines = []
    for item in error.errors():
        ctx = item.get("ctx") or {}
        cause = ctx.get("error")
        message = str(cause) if isinstance(cause, Exception) else item["msg"]
        where = _describe_location(data, tuple(item["loc"]))
        lines.append(f"{where}: {message}" if where else message)
    return f"invalid map {source}: " + "; ".join(lines)


def parse_map(data: Mapping[str, Any], source: str = "<dict>") -> MapSpec:
    """Validate a map given as plain data (as read from YAML).

    Args:
        data: The map, with the fields of `MapSpec`.
        source: Where the data came from, for error messages.

    Returns:
        The validated map.

    Raises:
        MapSpecError: a field is malformed (the message names the field path, with
            the room or station name where there is one) or the ship is impossible
            (the message names the room, corridor or station and what to fix).
    """
    if not isinstance(data, Mapping):
        raise MapSpecError(f"invalid map {source}: expected a mapping at the top level")
    try:
        return MapSpec.model_validate(data)
    except ValidationError as error:
        raise MapSpecError(_format_validation_error(error, data, source)) from error


def load_map(name_or_path: str) -> MapSpec:
    """Load and validate a map.

    Args:
        name_or_path: A bare map name such as `skeld` (read from the packaged
            `world/maps/<name>.yaml`) or a path to a YAML file.

    Returns:
        The validated map.

    Raises:
        MapSpecError: the map does not exist, is not valid YAML, or fails validation.
    """
    if re.fullmatch(_NAME, name_or_path):
        if name_or_path not in MAPS:
            raise MapSpecError(
                f"no packaged map called '{name_or_path}' (world/maps/; known maps: "
                f"{', '.join(sorted(MAPS.names()))})"
            )
        return MAPS.get(name_or_path)()
    path = Path(name_or_path)
    if not path.is_file():
        raise MapSpecError(f"map file {path} does not exist")
    return _parse_text(path.read_text(encoding="utf-8"), str(path))


@functools.lru_cache(maxsize=16)
def _packaged_map(name: str) -> MapSpec:
    """A packaged map, read and validated once per process (every game loads its map,
    and a process may play many). Shared: a `MapSpec` is immutable (frozen, tuples)."""
    text = resources.files("world").joinpath("maps", f"{name}.yaml").read_text(encoding="utf-8")
    # The packaged maps are known-good YAML: the C parser (where PyYAML has it) reads
    # them to the same data in a fraction of the time.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return _parse_text(text, f"'{name}'", loader)


def _parse_text(text: str, source: str, loader: Any = yaml.SafeLoader) -> MapSpec:
    """The validated map of YAML `text` read from `source` (for messages)."""
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506  (a safe loader)
    except yaml.YAMLError as error:
        raise MapSpecError(f"map {source} is not valid YAML: {error}") from error
    return parse_map(data, source)


def _register_packaged() -> None:
    """Register every map shipped in `world/maps/` under its file's name."""
    folder = resources.files("world").joinpath("maps")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        name = entry.name.removesuffix(".yaml")
        shipped = entry.name.endswith(".yaml") and re.fullmatch(_NAME, name) and entry.is_file()
        if shipped and not MAPS.held(name):
            MAPS.register(name, functools.partial(_packaged_map, name))


MAPS: Registry[Callable[[], MapSpec]] = Registry(
    "map", group="mineamongus.maps", load=_register_packaged
)
"""The maps a bare name selects (`load_map`), each a function returning the validated
map: every YAML file of `world/maps/` (registered on first lookup), and any a package
registers (`MAPS.register(name, "module:function")`, or an entry point of the
`mineamongus.maps` group naming that function)."""


def packaged_maps() -> list[str]:
    """The names of the registered maps, the ones shipped in `world/maps/` among them
    (`load_map` takes each), sorted."""
    return sorted(MAPS.names())


@functools.lru_cache(maxsize=1)
def packaged_room_aliases() -> Mapping[str, Mapping[str, str]]:
    """Every packaged map's room aliases: map name -> (alias -> room), read once."""
    return MappingProxyType(
        {name: MappingProxyType(load_map(name).room_aliases()) for name in packaged_maps()}
    )
