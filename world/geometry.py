"""Ship geometry: what is where, who can see whom, how far it is to walk.

`ShipGeometry` turns a `MapSpec` into a grid of cells (one per block column)
and answers the spatial questions the controller and scripted agents ask every
step. Positions are `Vec3` `(x, y, z)` floats in block coordinates; the cell of
a position is `(floor(x), floor(z))`. Heights are ignored: the ship has a single
floor and its walls are taller than a player's eyes, so vision and walking are
2-D problems.

Conventions:
    * Walking is 8-connected without corner cutting: a diagonal step is allowed
      only when both orthogonal neighbours are walkable (a player's hitbox cannot
      squeeze past a wall corner). Steps cost 1 and sqrt(2) blocks.
    * Path lengths are measured between cell centres.
    * Line of sight is exact (integer arithmetic on the floats' binary values) and
      conservative: a segment that touches any non-walkable cell, even at a single
      corner point or by running along a wall face, is blocked. Being a property of
      the closed segment, it is symmetric by construction.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import math
import random
import textwrap
import threading
from array import array
from collections import OrderedDict, deque
from collections.abc import Iterable

from world.shapes import Vec3
from world.spec import Cell, MapSpec

HALLWAY = "hallway"
"""`room_at` answer for a walkable corridor cell that is inside no room."""
GHOST_AREA = "ghost_area"
"""`room_at` answer for a cell of the ghost area."""
OUTSIDE = "outside"
"""`room_at` answer for walls and everything off the ship."""

_VOID, _WALL, _WALK = 0, 1, 2
_SQRT2 = math.sqrt(2.0)
_EPS = 1e-9
# Neighbour offsets: orthogonal first so that path tie-breaks prefer straight steps.
_STEPS: tuple[tuple[int, int], ...] = (
    (1, 0),
    (-1, 0),
    (0, 1),
    (0, -1),
    (1, 1),
    (1, -1),
    (-1, 1),
    (-1, -1),
)


def cell_of(pos: Vec3) -> Cell:
    """The `(x, z)` cell a position is in."""
    return (math.floor(pos[0]), math.floor(pos[2]))


def yaw_towards(src: Vec3, dst: Vec3) -> float:
    """Minecraft yaw (degrees, 0 = +Z, 90 = -X) that faces from `src` towards `dst`."""
    dx, dz = dst[0] - src[0], dst[2] - src[2]
    return math.degrees(math.atan2(-dx, dz)) % 360.0


class DistanceField:
    """Shortest walking distances from every walkable cell to one target cell.

    Obtained from `ShipGeometry.distance_field`; read-only.
    """

    def __init__(self, geometry: ShipGeometry, target: Cell, dist: array[float]) -> None:
        """Wrap a computed field (use `ShipGeometry.distance_field` instead)."""
        self._geometry = geometry
        self._dist = dist
        self.target = target
        """The cell all distances lead to."""

    def get(self, cell: Cell) -> float | None:
        """Walking distance in blocks from `cell` to the target, None if there is no path."""
        k = self._geometry._node(cell)
        if k < 0:
            return None
        d = self._dist[k]
        return None if math.isinf(d) else d


class _FieldStore:
    """The distance fields computed so far for one map, shared by its geometries.

    A field depends only on the map and its target, so whichever geometry computed it,
    every other one may read it. At most `limit` are kept (least recently used out);
    one that was dropped is computed again, to the same values.
    """

    def __init__(self, limit: int = 2048) -> None:
        self._limit = limit
        self._fields: OrderedDict[int, array[float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, target: int) -> array[float] | None:
        with self._lock:
            dist = self._fields.get(target)
            if dist is not None:
                self._fields.move_to_end(target)
            return dist

    def put(self, target: int, dist: array[float]) -> None:
        with self._lock:
            self._fields[target] = dist
            if len(self._fields) > self._limit:
                self._fields.popitem(last=False)


class ShipGeometry:
    """Precomputed grid of a ship, with rooms, visibility and walking distances.

    Distance fields are computed lazily (one Dijkstra run per target cell) and
    kept in a per-instance LRU cache, so repeated `path_length` queries towards the
    same targets (stations, rooms, the button) cost O(1).
    """

    def __init__(self, spec: MapSpec, *, max_cached_fields: int = 256) -> None:
        """Build the grid.

        The grid is built once per map and process (`_built_grid`) and shared, read-only,
        by every geometry of that map, as are the distance fields computed so far; each
        geometry keeps its own LRU of the fields it holds, so which fields an instance
        has cached (and hence every answer) is the same as if it had built its own.

        Args:
            spec: A validated map.
            max_cached_fields: How many distance fields to keep (each holds one
                float per walkable cell).
        """
        if max_cached_fields < 1:
            raise ValueError("max_cached_fields must be >= 1")
        self.spec = spec
        """The map this geometry was built from."""
        self._max_fields = max_cached_fields
        self._fields: OrderedDict[int, array[float]] = OrderedDict()
        try:
            built = _built_grid(spec)
        except TypeError:  # a map that cannot be a cache key (unhashable): built here
            built = ShipGeometry._build(spec)
        for name in _GRID_ATTRIBUTES:
            setattr(self, name, getattr(built, name))
        self._computed: _FieldStore = built._computed

    @classmethod
    def _build(cls, spec: MapSpec) -> ShipGeometry:
        """A geometry whose grid is built from `spec` here (the one `_built_grid` keeps)."""
        geometry = cls.__new__(cls)
        geometry._build_grid(spec)
        return geometry

    def _build_grid(self, spec: MapSpec) -> None:
        self.spec = spec
        self._max_fields = 1
        self._fields = OrderedDict()
        self._computed = _FieldStore()

        rects = [r.rect for r in spec.rooms] + [c.rect for c in spec.corridors]
        rects.append(spec.ghost_area)
        margin = 2  # wall ring plus one void cell, so neighbour lookups stay in the grid
        self._x0 = min(r.x0 for r in rects) - margin
        self._z0 = min(r.z0 for r in rects) - margin
        self._w = max(r.x1 for r in rects) + margin - self._x0 + 1
        self._h = max(r.z1 for r in rects) + margin - self._z0 + 1

        self._room_names: tuple[str, ...] = tuple(room.name for room in spec.rooms)
        self._region_names: tuple[str, ...] = (*self._room_names, HALLWAY, GHOST_AREA, OUTSIDE)
        hallway = len(self._room_names)
        ghost = hallway + 1
        outside = hallway + 2
        size = self._w * self._h
        self._kind = bytearray(size)
        self._region = array("h", [outside]) * size

        for corridor in spec.corridors:
            for cell in corridor.rect.cells():
                i = self._index(cell)
                self._kind[i] = _WALK
                self._region[i] = hallway
        for r, room in enumerate(spec.rooms):
            for cell in room.rect.cells():
                i = self._index(cell)
                self._kind[i] = _WALK
                self._region[i] = r
        for cell in spec.ghost_area.cells():
            i = self._index(cell)
            self._kind[i] = _WALK
            self._region[i] = ghost
        for i in range(size):
            if self._kind[i] == _WALK:
                x, z = self._cell(i)
                for dx, dz in _STEPS:
                    j = self._index((x + dx, z + dz))
                    if self._kind[j] == _VOID:
                        self._kind[j] = _WALL

        # Graph over walkable cells ("nodes"), numbered in grid order.
        self._node_of = array("i", [-1]) * size
        self._nodes: list[Cell] = []
        for i in range(size):
            if self._kind[i] == _WALK:
                self._node_of[i] = len(self._nodes)
                self._nodes.append(self._cell(i))
        self._edges: list[tuple[tuple[int, float], ...]] = [
            self._node_edges(cell) for cell in self._nodes
        ]

        self._cells_by_region: dict[str, list[Cell]] = {name: [] for name in self._region_names}
        for cell in self._nodes:
            self._cells_by_region[self._region_names[self._region[self._index(cell)]]].append(cell)
        self._ship_cells = [
            cell for cell in self._nodes if self._region[self._index(cell)] != ghost
        ]
        self._ghost_cells = self._spread(spec.ghost_area.cells())
        self._station_cells = {station.id: station.cell for station in spec.stations}
        self._station_rooms = {station.id: station.room for station in spec.stations}
        self._adjacency = self._compute_adjacency()
        self._room_centers: dict[str, Vec3] = {}
        for name in self._room_names:
            with contextlib.suppress(ValueError):  # no free cell: `room_center` says so
                self._room_centers[name] = self._find_room_center(name)

    # -- grid helpers -------------------------------------------------------------

    def _index(self, cell: Cell) -> int:
        return (cell[1] - self._z0) * self._w + (cell[0] - self._x0)

    def _cell(self, i: int) -> Cell:
        return (self._x0 + i % self._w, self._z0 + i // self._w)

    def _in_grid(self, cell: Cell) -> bool:
        x, z = cell
        return 0 <= x - self._x0 < self._w and 0 <= z - self._z0 < self._h

    def _node(self, cell: Cell) -> int:
        if not self._in_grid(cell):
            return -1
        return self._node_of[self._index(cell)]

    def _walkable(self, cell: Cell) -> bool:
        return self._in_grid(cell) and self._kind[self._index(cell)] == _WALK

    def _node_edges(self, cell: Cell) -> tuple[tuple[int, float], ...]:
        x, z = cell
        edges: list[tuple[int, float]] = []
        for dx, dz in _STEPS:
            target = (x + dx, z + dz)
            if not self._walkable(target):
                continue
            if dx and dz:
                if not (self._walkable((x + dx, z)) and self._walkable((x, z + dz))):
                    continue  # no corner cutting
                edges.append((self._node_of[self._index(target)], _SQRT2))
            else:
                edges.append((self._node_of[self._index(target)], 1.0))
        return tuple(edges)

    @staticmethod
    def _spread(cells: Iterable[Cell]) -> list[Cell]:
        # Every other cell first (players one block apart), then the gaps.
        ordered = list(cells)
        x0, z0 = ordered[0]
        first = [c for c in ordered if (c[0] - x0) % 2 == 0 and (c[1] - z0) % 2 == 0]
        chosen = set(first)
        return first + [c for c in ordered if c not in chosen]

    def is_walkable(self, cell: Cell) -> bool:
        """Whether a player can stand on `cell` (ship or ghost area)."""
        return self._walkable(cell)

    def is_wall(self, cell: Cell) -> bool:
        """Whether `cell` holds a wall column."""
        return self._in_grid(cell) and self._kind[self._index(cell)] == _WALL

    @property
    def bounds(self) -> tuple[int, int, int, int]:
        """`(x0, z0, x1, z1)` of the grid, inclusive; everything outside is void."""
        return (self._x0, self._z0, self._x0 + self._w - 1, self._z0 + self._h - 1)

    # -- rooms --------------------------------------------------------------------

    @property
    def rooms(self) -> tuple[str, ...]:
        """Room names in spec order."""
        return self._room_names

    def room_at(self, pos: Vec3) -> str:
        """The room a position is in.

        Returns:
            A room name; `"hallway"` for a corridor cell inside no room;
            `"ghost_area"` inside the ghost area; `"outside"` for walls and
            everything off the ship.
        """
        cell = cell_of(pos)
        if not self._in_grid(cell):
            return OUTSIDE
        return self._region_names[self._region[self._index(cell)]]

    def walkable_cells_in(self, room: str) -> list[Cell]:
        """Walkable cells of a room (or of `"hallway"` / `"ghost_area"`), in row order.

        Raises:
            ValueError: unknown room name.
        """
        if room not in self._cells_by_region or room == OUTSIDE:
            raise ValueError(f"unknown room '{room}'; known: {', '.join(self._room_names)}")
        return list(self._cells_by_region[room])

    def random_walkable_cell(self, rng: random.Random, room: str | None = None) -> Cell:
        """A uniformly random walkable cell of `room`, or of the whole ship if None.

        The ghost area is only drawn from when asked for by name.
        """
        cells = self._ship_cells if room is None else self.walkable_cells_in(room)
        return rng.choice(cells)

    def adjacency(self) -> dict[str, list[str]]:
        """Which rooms connect to which through hallways (both directions, spec order)."""
        return {room: list(others) for room, others in self._adjacency.items()}

    def _compute_adjacency(self) -> dict[str, list[str]]:
        hallway = len(self._room_names)
        component: dict[Cell, int] = {}
        touching: list[set[int]] = []
        for start in self._cells_by_region[HALLWAY]:
            if start in component:
                continue
            label = len(touching)
            rooms: set[int] = set()
            component[start] = label
            queue = deque([start])
            while queue:
                x, z = queue.popleft()
                for cell in ((x + 1, z), (x - 1, z), (x, z + 1), (x, z - 1)):
                    if not self._walkable(cell):
                        continue
                    region = self._region[self._index(cell)]
                    if region == hallway and cell not in component:
                        component[cell] = label
                        queue.append(cell)
                    elif region < hallway:
                        rooms.add(region)
            touching.append(rooms)
        linked: dict[int, set[int]] = {r: set() for r in range(hallway)}
        for rooms in touching:
            for r in rooms:
                linked[r] |= rooms - {r}
        return {
            self._room_names[r]: [self._room_names[o] for o in sorted(linked[r])]
            for r in range(hallway)
        }

    # -- positions ----------------------------------------------------------------

    def stand_pos(self, cell: Cell) -> Vec3:
        """Where a player stands on `cell`: its centre, one block above the floor."""
        return (cell[0] + 0.5, float(self.spec.floor_y + 1), cell[1] + 0.5)

    def room_center(self, name: str) -> Vec3:
        """A walkable cell near the room's centre that is neither a station nor the button.

        Raises:
            ValueError: unknown room name.
        """
        if name not in self._room_names:
            raise ValueError(f"unknown room '{name}'; known: {', '.join(self._room_names)}")
        center = self._room_centers.get(name)
        return center if center is not None else self._find_room_center(name)

    def _find_room_center(self, name: str) -> Vec3:
        """`room_center(name)`, found once per grid (a game asks it thousands of times)."""
        rect = self.spec.room(name).rect
        cx, cz = rect.center
        taken = set(self._station_cells.values()) | {self.spec.emergency_button}
        candidates = [c for c in self._cells_by_region[name] if c not in taken]
        best = min(candidates, key=lambda c: ((c[0] + 0.5 - cx) ** 2 + (c[1] + 0.5 - cz) ** 2, c))
        return self.stand_pos(best)

    def station_ids(self) -> list[int]:
        """All station ids, ascending (0..N-1)."""
        return sorted(self._station_cells)

    def station_room(self, station_id: int) -> str:
        """The room a station is in.

        Raises:
            KeyError: unknown station id.
        """
        return self._station_rooms[station_id]

    def station_cell(self, station_id: int) -> Cell:
        """The cell of a task station.

        Raises:
            KeyError: unknown station id.
        """
        return self._station_cells[station_id]

    def station_pos(self, station_id: int) -> Vec3:
        """Where a player stands to do a task.

        Raises:
            KeyError: unknown station id.
        """
        return self.stand_pos(self.station_cell(station_id))

    def button_pos(self) -> Vec3:
        """Where a player stands to press the emergency button."""
        return self.stand_pos(self.spec.emergency_button)

    def seat_pos(self, i: int) -> Vec3:
        """Meeting seat `i` (0-based).

        Raises:
            IndexError: no such seat.
        """
        if not 0 <= i < len(self.spec.seats):
            raise IndexError(f"seat {i} does not exist (the map has {len(self.spec.seats)})")
        return self.stand_pos(self.spec.seats[i])

    def seat_yaw(self, i: int) -> float:
        """Yaw that faces the emergency button from seat `i`."""
        return yaw_towards(self.seat_pos(i), self.button_pos())

    def spawn_pos(self, i: int) -> Vec3:
        """Spawn point of player `i`: the same as `seat_pos(i)`."""
        return self.seat_pos(i)

    def ghost_pos(self, i: int) -> Vec3:
        """A distinct cell of the ghost area for each `i` (spaced out where possible).

        Raises:
            IndexError: `i` is negative or the ghost area has no more cells.
        """
        if not 0 <= i < len(self._ghost_cells):
            raise IndexError(f"ghost position {i} does not exist")
        return self.stand_pos(self._ghost_cells[i])

    # -- visibility ---------------------------------------------------------------

    def _blocks(self, x: int, z: int) -> bool:
        if not (0 <= x - self._x0 < self._w and 0 <= z - self._z0 < self._h):
            return True
        return self._kind[(z - self._z0) * self._w + (x - self._x0)] != _WALK

    def line_of_sight(self, a: Vec3, b: Vec3) -> bool:
        """Whether the straight segment from `a` to `b` (in x, z) avoids every wall.

        The test is exact and conservative: it is False as soon as the closed
        segment touches a non-walkable cell, including at a single corner point.
        It is symmetric in `a` and `b`.

        Raises:
            ValueError: a coordinate is not finite.
        """
        coords = (a[0], a[2], b[0], b[2])
        if not all(math.isfinite(v) for v in coords):
            raise ValueError(f"positions must be finite, got {a} and {b}")
        # Scale all four coordinates to integers by their common binary denominator,
        # so every comparison below is exact.
        ratios = [float(v).as_integer_ratio() for v in coords]
        d = max(den for _, den in ratios)  # denominators are powers of two
        ax, az, bx, bz = (num * (d // den) for num, den in ratios)
        if (bx, bz) < (ax, az):
            ax, az, bx, bz = bx, bz, ax, az
        dx, dz = bx - ax, bz - az  # dx >= 0

        if dx == 0:
            zlo, zhi = min(az, bz), max(az, bz)
            for i in range(-(-ax // d) - 1, ax // d + 1):
                for j in range(-(-zlo // d) - 1, zhi // d + 1):
                    if self._blocks(i, j):
                        return False
            return True

        den = dx * d
        for i in range(-(-ax // d) - 1, bx // d + 1):
            xa = max(i * d, ax)
            xb = min((i + 1) * d, bx)
            # z(x) * dx, for the segment restricted to this column.
            na = az * dx + (xa - ax) * dz
            nb = az * dx + (xb - ax) * dz
            lo, hi = (na, nb) if na <= nb else (nb, na)
            for j in range(-(-lo // den) - 1, hi // den + 1):
                if self._blocks(i, j):
                    return False
        return True

    def can_see(self, a: Vec3, b: Vec3, radius: float) -> bool:
        """Whether `b` is within `radius` blocks of `a` (in x, z) and in line of sight."""
        if math.hypot(b[0] - a[0], b[2] - a[2]) > radius:
            return False
        return self.line_of_sight(a, b)

    # -- walking ------------------------------------------------------------------

    def distance_field(self, cell: Cell) -> DistanceField:
        """Walking distances from every walkable cell to `cell` (cached).

        Raises:
            ValueError: `cell` is not walkable.
        """
        node = self._node(cell)
        if node < 0:
            raise ValueError(f"cell {cell} is not walkable")
        return DistanceField(self, cell, self._field(node))

    def _field(self, target: int) -> array[float]:
        cached = self._fields.get(target)
        if cached is not None:
            self._fields.move_to_end(target)
            return cached
        dist = self._computed.get(target)
        if dist is None:
            dist = self._dijkstra(target)
            self._computed.put(target, dist)
        self._fields[target] = dist
        if len(self._fields) > self._max_fields:
            self._fields.popitem(last=False)
        return dist

    def _dijkstra(self, target: int) -> array[float]:
        """Walking distances from every node to `target` (shared: never written to)."""
        dist = array("d", [math.inf]) * len(self._nodes)
        dist[target] = 0.0
        heap: list[tuple[float, int]] = [(0.0, target)]
        edges = self._edges
        while heap:
            du, u = heapq.heappop(heap)
            if du > dist[u]:
                continue
            for v, cost in edges[u]:
                dv = du + cost
                if dv < dist[v] - _EPS:
                    dist[v] = dv
                    heapq.heappush(heap, (dv, v))
        return dist

    def path_length(self, a: Vec3, b: Vec3) -> float | None:
        """Walking distance in blocks between the cells of `a` and `b`.

        None if either cell is not walkable or there is no path (e.g. from the
        ghost area to the ship). O(1) once a field towards either cell is cached.
        """
        na, nb = self._node(cell_of(a)), self._node(cell_of(b))
        if na < 0 or nb < 0:
            return None
        # The graph is undirected: reuse whichever endpoint's field is cached.
        if nb not in self._fields and na in self._fields:
            na, nb = nb, na
        d = self._field(nb)[na]
        return None if math.isinf(d) else d

    def path(self, a: Vec3, b: Vec3) -> list[Cell] | None:
        """A shortest walkable path of cells from the cell of `a` to the cell of `b`.

        Both ends are included; consecutive cells are 8-neighbours and diagonal
        steps never cut a wall corner. None if there is no path.
        """
        na, nb = self._node(cell_of(a)), self._node(cell_of(b))
        if na < 0 or nb < 0:
            return None
        dist = self._field(nb)
        if math.isinf(dist[na]):
            return None
        route = [self._nodes[na]]
        u = na
        while u != nb:
            u = min(self._edges[u], key=lambda e: dist[e[0]] + e[1])[0]
            route.append(self._nodes[u])
        return route

    # -- rendering ----------------------------------------------------------------

    @property
    def ship_bounds(self) -> tuple[int, int, int, int]:
        """`(x0, z0, x1, z1)` of the rooms and corridors with their wall ring, inclusive:
        the part of the grid a living player can reach (the ghost area left out)."""
        rects = [r.rect for r in self.spec.rooms] + [c.rect for c in self.spec.corridors]
        return (
            min(r.x0 for r in rects) - 1,
            min(r.z0 for r in rects) - 1,
            max(r.x1 for r in rects) + 1,
            max(r.z1 for r in rects) + 1,
        )

    def render_ascii(self, labels: bool = True, ghost_area: bool = True) -> str:
        """One character per cell, north (-z) at the top and west (-x) on the left.

        `.` floor, `#` wall, `S` task station, `B` emergency button, `o` meeting
        seat, space for void; with `labels`, each room's short name is written
        over floor cells near its centre. Without `ghost_area`, only the ship is
        drawn (`ship_bounds`: its top-left character is the cell `(x0, z0)`) and the
        ghost area's cells, where no living player goes, are left blank.
        """
        rows = [
            [
                {_VOID: " ", _WALL: "#", _WALK: "."}[self._kind[z * self._w + x]]
                for x in range(self._w)
            ]
            for z in range(self._h)
        ]

        def put(cell: Cell, char: str) -> None:
            rows[cell[1] - self._z0][cell[0] - self._x0] = char

        for seat in self.spec.seats:
            put(seat, "o")
        for cell in self._station_cells.values():
            put(cell, "S")
        put(self.spec.emergency_button, "B")
        if labels:
            for room in self.spec.rooms:
                self._put_label(rows, room.name)
        if not ghost_area:
            ghost = self.spec.ghost_area.expanded(1)
            x0, z0, x1, z1 = self.ship_bounds
            return "\n".join(
                "".join(
                    " " if ghost.x0 <= x <= ghost.x1 and ghost.z0 <= z <= ghost.z1 else char
                    for x, char in enumerate(
                        rows[z - self._z0][x0 - self._x0 : x1 - self._x0 + 1], start=x0
                    )
                ).rstrip()
                for z in range(z0, z1 + 1)
            )
        text = "\n".join("".join(row).rstrip() for row in rows).strip("\n")
        return textwrap.dedent(text)

    def _put_label(self, rows: list[list[str]], name: str) -> None:
        # On the row nearest the centre where the label covers plain floor only.
        rect = self.spec.room(name).rect
        label = short_name(name)
        cx, cz = rect.center
        x = max(rect.x0, math.floor(cx) - len(label) // 2)
        if x + len(label) - 1 > rect.x1:
            return
        middle = math.floor(cz)
        for z in sorted(range(rect.z0, rect.z1 + 1), key=lambda z: (abs(z - middle), z)):
            row = rows[z - self._z0]
            span = range(x - self._x0, x - self._x0 + len(label))
            if all(row[i] == "." for i in span):
                for i, char in zip(span, label, strict=True):
                    row[i] = char
                return


_GRID_ATTRIBUTES = (
    "_x0",
    "_z0",
    "_w",
    "_h",
    "_room_names",
    "_region_names",
    "_kind",
    "_region",
    "_node_of",
    "_nodes",
    "_edges",
    "_cells_by_region",
    "_ship_cells",
    "_ghost_cells",
    "_station_cells",
    "_station_rooms",
    "_adjacency",
    "_room_centers",
)
"""What a geometry takes from the grid built for its map: never written to after the
build (every method that hands one of them out hands out a copy or an immutable)."""


@functools.lru_cache(maxsize=8)
def _built_grid(spec: MapSpec) -> ShipGeometry:
    """The grid of `spec`, built once per process (a game builds several geometries of
    its map, and a process may play many games on it)."""
    return ShipGeometry._build(spec)


def short_name(name: str) -> str:
    """The label of a room in the ASCII map: `lower_engine` -> `LE`, `weapons` -> `WEA`."""
    words = name.split("_")
    if len(words) > 1:
        return "".join(word[0] for word in words).upper()
    return name[:3].upper()


def render_ascii(spec: MapSpec, labels: bool = True) -> str:
    """ASCII picture of a map; see `ShipGeometry.render_ascii` for the legend."""
    return ShipGeometry(spec).render_ascii(labels=labels)
