"""Ship geometry: rooms, positions, line of sight and walking distances."""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import world
from controller.protocol import Vec3
from world.geometry import ShipGeometry, cell_of, render_ascii, yaw_towards
from world.spec import Cell, MapSpec, load_map

Oracle = Callable[[ShipGeometry, Vec3, Vec3], bool]


def _random_pos(rng: random.Random, geometry: ShipGeometry, snap: bool) -> Vec3:
    x0, z0, x1, z1 = geometry.bounds
    if snap:  # grid lines, cell centres and quarter points: the corner cases
        return (rng.randint(4 * x0, 4 * x1) / 4, 65.0, rng.randint(4 * z0, 4 * z1) / 4)
    return (rng.uniform(x0, x1), 65.0, rng.uniform(z0, z1))


# -- rooms ----------------------------------------------------------------------


def test_rooms_in_spec_order(geometry: ShipGeometry, skeld: MapSpec) -> None:
    assert geometry.rooms == tuple(room.name for room in skeld.rooms)


def test_room_at_room_centres(geometry: ShipGeometry) -> None:
    for room in geometry.rooms:
        assert geometry.room_at(geometry.room_center(room)) == room


def test_room_center_is_free_floor(geometry: ShipGeometry, skeld: MapSpec) -> None:
    stations = {s.cell for s in skeld.stations}
    for room in geometry.rooms:
        cell = cell_of(geometry.room_center(room))
        assert cell not in stations and cell != skeld.emergency_button
        assert cell in geometry.walkable_cells_in(room)
        cx, cz = skeld.room(room).rect.center
        assert math.hypot(cell[0] + 0.5 - cx, cell[1] + 0.5 - cz) <= 1.5


def test_room_at_corridor_ghost_and_outside(geometry: ShipGeometry) -> None:
    assert geometry.room_at((0.5, 65.0, 9.5)) == "hallway"  # cafeteria -> storage
    assert geometry.room_at((0.5, 65.0, -16.5)) == "hallway"  # north hall
    assert geometry.room_at((-6.5, 65.0, 0.5)) == "cafeteria"  # inside, at the west wall
    assert geometry.room_at((-8.5, 65.0, 0.5)) == "outside"  # the wall itself
    for i in range(8):
        assert geometry.room_at(geometry.ghost_pos(i)) == "ghost_area"
    assert geometry.room_at((-55.0, 65.0, 55.0)) == "outside"
    assert geometry.room_at((1000.0, 65.0, -1000.0)) == "outside"


def test_room_at_uses_floor_of_coordinates(geometry: ShipGeometry) -> None:
    # cafeteria interior is x -7..7: x = 7.999 is still inside, x = 8.0 is the wall
    assert geometry.room_at((7.999, 65.0, 5.5)) == "cafeteria"
    assert geometry.room_at((8.0, 65.0, 5.5)) == "outside"
    assert geometry.room_at((-7.0, 65.0, 5.5)) == "cafeteria"
    assert geometry.room_at((-7.001, 65.0, 5.5)) == "outside"


def test_walkable_cells_in(geometry: ShipGeometry, skeld: MapSpec) -> None:
    for room in skeld.rooms:
        cells = geometry.walkable_cells_in(room.name)
        assert sorted(cells) == sorted(room.rect.cells())
    hall = geometry.walkable_cells_in("hallway")
    assert hall and all(geometry.room_at(geometry.stand_pos(c)) == "hallway" for c in hall)
    assert len(geometry.walkable_cells_in("ghost_area")) == skeld.ghost_area.area
    with pytest.raises(ValueError, match="unknown room 'kitchen'"):
        geometry.walkable_cells_in("kitchen")


def test_random_walkable_cell_is_seeded(geometry: ShipGeometry) -> None:
    first = [geometry.random_walkable_cell(random.Random(7)) for _ in range(3)]
    again = [geometry.random_walkable_cell(random.Random(7)) for _ in range(3)]
    assert first == again
    rng = random.Random(3)
    for _ in range(200):
        cell = geometry.random_walkable_cell(rng)
        assert geometry.room_at(geometry.stand_pos(cell)) not in {"outside", "ghost_area"}
        cell = geometry.random_walkable_cell(rng, "electrical")
        assert geometry.room_at(geometry.stand_pos(cell)) == "electrical"


def test_adjacency(geometry: ShipGeometry) -> None:
    adj = geometry.adjacency()
    assert set(adj) == set(geometry.rooms)
    for room, others in adj.items():
        assert others, f"{room} connects to nothing"
        assert room not in others
        for other in others:
            assert room in adj[other]
    assert {"storage", "admin", "security", "weapons", "medbay"} <= set(adj["cafeteria"])
    assert "reactor" in adj["upper_engine"] and "reactor" in adj["lower_engine"]
    assert "navigation" not in adj["cafeteria"]
    # connected as a graph
    seen, todo = {"cafeteria"}, ["cafeteria"]
    while todo:
        for other in adj[todo.pop()]:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    assert seen == set(geometry.rooms)
    adj["cafeteria"].clear()  # a copy: the geometry is unaffected
    assert geometry.adjacency()["cafeteria"]


# -- positions ------------------------------------------------------------------


def test_positions(geometry: ShipGeometry, skeld: MapSpec) -> None:
    assert geometry.stand_pos((3, -4)) == (3.5, 65.0, -3.5)
    assert geometry.button_pos() == (0.5, 65.0, 0.5)
    assert geometry.station_ids() == list(range(20))
    for station in skeld.stations:
        pos = geometry.station_pos(station.id)
        assert cell_of(pos) == station.cell
        assert geometry.room_at(pos) == station.room == geometry.station_room(station.id)
    with pytest.raises(KeyError):
        geometry.station_pos(20)


def test_seats_spawns_and_ghosts(geometry: ShipGeometry) -> None:
    seats = [geometry.seat_pos(i) for i in range(8)]
    assert len(set(seats)) == 8
    assert all(geometry.room_at(p) == "cafeteria" for p in seats)
    assert [geometry.spawn_pos(i) for i in range(8)] == seats
    ghosts = [geometry.ghost_pos(i) for i in range(8)]
    assert len(set(ghosts)) == 8
    for a, b in itertools.combinations(ghosts, 2):
        assert math.dist(a, b) >= 2.0  # spread out, not stacked
    with pytest.raises(IndexError):
        geometry.seat_pos(8)
    with pytest.raises(IndexError):
        geometry.ghost_pos(-1)


def test_seats_face_the_button(geometry: ShipGeometry) -> None:
    # seat 0 is east of the button: facing west is yaw 90 in Minecraft
    assert geometry.seat_yaw(0) == pytest.approx(90.0)
    assert yaw_towards((0.0, 0.0, 0.0), (0.0, 0.0, 5.0)) == pytest.approx(0.0)
    assert yaw_towards((0.0, 0.0, 0.0), (0.0, 0.0, -5.0)) == pytest.approx(180.0)
    assert yaw_towards((0.0, 0.0, 0.0), (5.0, 0.0, 0.0)) == pytest.approx(270.0)


# -- line of sight --------------------------------------------------------------


def test_line_of_sight_inside_a_room(geometry: ShipGeometry) -> None:
    # opposite corners of the cafeteria interior (x -7..7, z -6..6)
    a, b = (-6.7, 65.0, -5.7), (7.7, 65.0, 6.7)
    assert geometry.line_of_sight(a, b)
    assert geometry.line_of_sight(b, a)
    assert geometry.can_see(a, b, 25.0)
    assert not geometry.can_see(a, b, 10.0)


def test_no_line_of_sight_through_walls(geometry: ShipGeometry) -> None:
    pairs = [
        ("security", "medbay"),
        ("cafeteria", "navigation"),
        ("electrical", "lower_engine"),
        ("storage", "communications"),
        ("cafeteria", "weapons"),
    ]
    for first, second in pairs:
        a, b = geometry.room_center(first), geometry.room_center(second)
        assert not geometry.line_of_sight(a, b), (first, second)
        assert not geometry.line_of_sight(b, a), (first, second)
        assert not geometry.can_see(a, b, 1000.0)


def test_line_of_sight_through_a_doorway(geometry: ShipGeometry) -> None:
    # straight down the corridor from the cafeteria into storage
    assert geometry.line_of_sight((0.5, 65.0, 2.5), (0.5, 65.0, 16.5))
    # but not from a cafeteria corner past the door jamb
    assert not geometry.line_of_sight((-6.5, 65.0, 5.5), (0.5, 65.0, 16.5))


def test_ghost_area_is_hidden(geometry: ShipGeometry) -> None:
    ghost = geometry.ghost_pos(0)
    for room in geometry.rooms:
        assert not geometry.line_of_sight(geometry.room_center(room), ghost)
    assert geometry.line_of_sight(geometry.ghost_pos(0), geometry.ghost_pos(1))


def test_walls_and_void_block_sight(geometry: ShipGeometry) -> None:
    in_wall = (8.5, 65.0, 5.5)
    assert not geometry.line_of_sight(in_wall, in_wall)
    assert not geometry.line_of_sight((0.5, 65.0, 0.5), in_wall)
    assert geometry.line_of_sight((0.5, 65.0, 0.5), (0.5, 65.0, 0.5))
    with pytest.raises(ValueError):
        geometry.line_of_sight((math.nan, 65.0, 0.0), (0.5, 65.0, 0.5))


def test_corners_are_exact(tiny: MapSpec) -> None:
    # cafeteria x 0..8, z 0..8; its east wall is x = 9 except the door at z 1..3
    geometry = ShipGeometry(tiny)
    # grazing the wall corner at (9, 4) (cell (9, 4) is wall, (9, 3) is door)
    assert not geometry.line_of_sight((8.5, 65.0, 4.5), (9.5, 65.0, 3.5))
    assert not geometry.line_of_sight((9.5, 65.0, 3.5), (8.5, 65.0, 4.5))
    # the same direction, a hair inside the door, is clear
    assert geometry.line_of_sight((8.5, 65.0, 4.49), (9.5, 65.0, 3.49))
    # running exactly along a wall face (x = 9 for z > 4) is blocked, a hair off it is not
    assert geometry.line_of_sight((9.0, 65.0, 1.5), (9.0, 65.0, 3.5))  # both sides open
    assert not geometry.line_of_sight((9.0, 65.0, 3.5), (9.0, 65.0, 4.5))
    assert not geometry.line_of_sight((8.99, 65.0, 4.5), (9.0, 65.0, 6.5))
    assert geometry.line_of_sight((8.99, 65.0, 4.5), (8.99, 65.0, 6.5))
    # into the storage room through the door, and not through its wall
    assert geometry.line_of_sight((4.5, 65.0, 2.5), (15.5, 65.0, 2.5))
    assert not geometry.line_of_sight((4.5, 65.0, 6.5), (14.5, 65.0, 2.5))


def test_line_of_sight_matches_an_exact_oracle(
    tiny: MapSpec, geometry: ShipGeometry, los_oracle: Oracle
) -> None:
    rng = random.Random(11)
    small = ShipGeometry(tiny)
    for geo, n in ((small, 3000), (geometry, 600)):
        for k in range(n):
            snap = k % 2 == 0
            a, b = _random_pos(rng, geo, snap), _random_pos(rng, geo, snap)
            if k % 5 == 0:  # short segments, which often start and end in rooms
                b = (a[0] + rng.randint(-8, 8) / 2, 65.0, a[2] + rng.randint(-8, 8) / 2)
            expected = los_oracle(geo, a, b)
            assert geo.line_of_sight(a, b) is expected, (a, b)
            assert geo.line_of_sight(b, a) is expected, (b, a)


def test_line_of_sight_is_fast(geometry: ShipGeometry) -> None:
    rng = random.Random(5)
    pairs = [
        (geometry.stand_pos(geometry.random_walkable_cell(rng)),
         geometry.stand_pos(geometry.random_walkable_cell(rng)))
        for _ in range(500)
    ]  # fmt: skip
    start = time.perf_counter()
    for a, b in pairs:
        geometry.line_of_sight(a, b)
    assert (time.perf_counter() - start) / len(pairs) < 2e-3


# -- walking --------------------------------------------------------------------


def _check_path(geometry: ShipGeometry, path: list[Cell]) -> float:
    length = 0.0
    for (x0, z0), (x1, z1) in itertools.pairwise(path):
        dx, dz = x1 - x0, z1 - z0
        assert max(abs(dx), abs(dz)) == 1
        assert geometry.is_walkable((x1, z1))
        if dx and dz:  # no corner cutting
            assert geometry.is_walkable((x0 + dx, z0)) and geometry.is_walkable((x0, z0 + dz))
        length += math.hypot(dx, dz)
    return length


def test_every_room_is_reachable_from_the_cafeteria(geometry: ShipGeometry) -> None:
    start = geometry.room_center("cafeteria")
    for room in geometry.rooms:
        length = geometry.path_length(start, geometry.room_center(room))
        assert length is not None, room
    for station in geometry.station_ids():
        assert geometry.path_length(geometry.button_pos(), geometry.station_pos(station))


def test_paths_are_sane(geometry: ShipGeometry) -> None:
    longest = 0.0
    for first, second in itertools.combinations(geometry.rooms, 2):
        a, b = geometry.room_center(first), geometry.room_center(second)
        path = geometry.path(a, b)
        length = geometry.path_length(a, b)
        assert path is not None and length is not None
        assert path[0] == cell_of(a) and path[-1] == cell_of(b)
        assert _check_path(geometry, path) == pytest.approx(length)
        assert length >= math.dist((a[0], a[2]), (b[0], b[2])) - 1e-9
        assert geometry.path_length(b, a) == pytest.approx(length)
        longest = max(longest, length)
    assert longest <= 90.0  # the map's scale: the farthest rooms are ~85 blocks apart


def test_path_within_a_room_is_straight(geometry: ShipGeometry) -> None:
    a, b = (-5.5, 65.0, -4.5), (4.5, 65.0, -4.5)
    assert geometry.path_length(a, b) == pytest.approx(10.0)
    assert geometry.path_length(a, (4.5, 65.0, 5.5)) == pytest.approx(10.0 * math.sqrt(2))
    assert geometry.path(a, a) == [cell_of(a)]
    assert geometry.path_length(a, a) == 0.0


def test_no_path_to_the_ghost_area_or_walls(geometry: ShipGeometry) -> None:
    centre = geometry.room_center("cafeteria")
    assert geometry.path(centre, geometry.ghost_pos(0)) is None
    assert geometry.path_length(geometry.ghost_pos(0), centre) is None
    assert geometry.path_length(centre, (8.5, 65.0, 5.5)) is None
    assert geometry.path((8.5, 65.0, 5.5), centre) is None
    assert geometry.path_length(geometry.ghost_pos(0), geometry.ghost_pos(3)) is not None


def test_distance_fields_are_cached(skeld: MapSpec) -> None:
    geometry = ShipGeometry(skeld, max_cached_fields=2)
    station = geometry.station_pos(3)
    field = geometry.distance_field(cell_of(station))
    assert field.get(cell_of(station)) == 0.0
    assert field.get((8, 5)) is None  # a wall
    rng = random.Random(1)
    starts = [geometry.stand_pos(geometry.random_walkable_cell(rng)) for _ in range(2000)]
    t0 = time.perf_counter()
    lengths = [geometry.path_length(s, station) for s in starts]
    per_call = (time.perf_counter() - t0) / len(starts)
    assert per_call < 1e-4
    assert lengths == [field.get(cell_of(s)) for s in starts]
    # the LRU keeps at most two fields and still answers correctly after eviction
    for sid in (0, 1, 2, 3):
        geometry.path_length(geometry.button_pos(), geometry.station_pos(sid))
    assert geometry.path_length(starts[0], station) == lengths[0]
    with pytest.raises(ValueError):
        geometry.distance_field((8, 5))
    with pytest.raises(ValueError):
        ShipGeometry(skeld, max_cached_fields=0)


def test_first_distance_field_is_quick(skeld: MapSpec) -> None:
    geometry = ShipGeometry(skeld)
    t0 = time.perf_counter()
    geometry.distance_field((0, 0))
    assert time.perf_counter() - t0 < 0.25


# -- rendering ------------------------------------------------------------------


def test_render_ascii(skeld: MapSpec) -> None:
    plain = render_ascii(skeld, labels=False)
    assert set(plain) <= set(".#SBo \n")
    assert plain.count("S") == 20
    assert plain.count("B") == 1
    assert plain.count("o") == len(skeld.seats)
    text = render_ascii(skeld)
    assert text.count("\n") == plain.count("\n")
    for label in ("CAF", "REA", "NAV", "LE", "UE", "O2", "MED"):
        assert label in text
    assert text.replace("O2", "").count("o") == len(skeld.seats)


@pytest.mark.parametrize("name", ["skeld", "outpost"])
def test_render_ascii_of_the_ship_alone_starts_at_its_bounds(name: str) -> None:
    spec = load_map(name)
    geometry = ShipGeometry(spec)
    ship = geometry.render_ascii(labels=False, ghost_area=False)
    x0, z0, x1, z1 = geometry.ship_bounds
    rows = ship.split("\n")
    assert len(rows) == z1 - z0 + 1 and max(len(r) for r in rows) <= x1 - x0 + 1

    def at(cell: tuple[int, int]) -> str:
        row = rows[cell[1] - z0]
        return row[cell[0] - x0] if cell[0] - x0 < len(row) else " "

    assert at(spec.emergency_button) == "B"
    for seat in spec.seats:
        assert at(seat) == "o"
    assert ship.count("S") == len(spec.stations)
    assert ship.count(".") < render_ascii(spec, labels=False).count(".")  # no ghost floor
    inside = [(x, z) for x, z in spec.ghost_area.cells() if x0 <= x <= x1 and z0 <= z <= z1]
    assert all(at(c) == " " for c in inside)


# -- one grid per map ---------------------------------------------------------------


def test_geometries_of_one_map_share_its_grid_and_fields_but_not_their_caches(
    skeld: MapSpec,
) -> None:
    """Built once per map and process: a second geometry of an equal map reads the first
    one's grid and distance fields, yet answers as one built alone would, holds only the
    fields it asked for, and hands out copies that a caller may change."""
    first = ShipGeometry(skeld, max_cached_fields=2)
    again = ShipGeometry(load_map("skeld"))
    alone = ShipGeometry._build(skeld)  # what `__init__` built before the grid was shared
    assert again._nodes is first._nodes and again._edges is first._edges
    assert alone._nodes is not first._nodes and alone._nodes == first._nodes
    station = first.station_pos(2)
    rng = random.Random(4)
    starts = [first.stand_pos(first.random_walkable_cell(rng)) for _ in range(50)]
    lengths = [first.path_length(s, station) for s in starts]
    target = first._node(cell_of(station))
    # the field `first` computed is read, not computed again, by `again`
    assert again._computed.get(target) is first._fields[target]
    assert [again.path_length(s, station) for s in starts] == lengths
    assert [alone.path_length(s, station) for s in starts] == lengths
    assert [again.path(s, station) for s in starts[:5]] == [
        alone.path(s, station) for s in starts[:5]
    ]
    assert list(again._fields) == [target] and len(first._fields) == 1
    # what a geometry hands out is the caller's own
    room = first.rooms[0]
    cells = first.walkable_cells_in(room)
    cells.clear()
    first.adjacency()[room].append("nowhere")
    assert again.walkable_cells_in(room) == alone.walkable_cells_in(room) != []
    assert again.adjacency() == alone.adjacency()


def test_a_packaged_map_is_read_once_and_a_map_file_every_time(tmp_path: Path) -> None:
    assert load_map("skeld") is load_map("skeld")
    path = tmp_path / "skeld.yaml"
    path.write_text((Path(world.__file__).parent / "maps" / "skeld.yaml").read_text())
    from_file = load_map(str(path))
    assert from_file == load_map("skeld") and from_file is not load_map(str(path))
