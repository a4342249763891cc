"""Map specs: the shipped map is sound, and every broken map is refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from world.builder import BUTTON_BLOCK, STATION_BLOCK
from world.spec import (
    WORLD_LIMIT,
    MapSpec,
    MapSpecError,
    Rect,
    load_map,
    packaged_maps,
    parse_map,
)

SKELD_ROOMS = {
    "cafeteria", "weapons", "o2", "navigation", "shields", "communications", "storage",
    "admin", "electrical", "lower_engine", "upper_engine", "reactor", "security", "medbay",
}  # fmt: skip

MC_DATA = Path(__file__).resolve().parents[2] / "node_modules" / "minecraft-data" / "minecraft-data"


def _room(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in data["rooms"] if r["name"] == name)


def _station(data: dict[str, Any], sid: int) -> dict[str, Any]:
    return next(s for s in data["stations"] if s["id"] == sid)


def _refused(data: dict[str, Any]) -> str:
    with pytest.raises(MapSpecError) as info:
        parse_map(data, "test")
    return str(info.value)


# -- the shipped map ------------------------------------------------------------


def test_skeld_loads_by_name_and_by_path(skeld: MapSpec) -> None:
    path = Path(__file__).resolve().parents[2] / "world" / "maps" / "skeld.yaml"
    assert load_map(str(path)) == skeld
    assert skeld.name == "skeld"
    assert skeld.floor_y == 64
    assert skeld.wall_height == 3


def test_skeld_has_the_among_us_rooms(skeld: MapSpec) -> None:
    assert {room.name for room in skeld.rooms} == SKELD_ROOMS
    assert skeld.meeting_room == "cafeteria"
    for room in skeld.rooms:
        assert 9 <= max(room.rect.width, room.rect.depth) <= 15, room.name
        assert min(room.rect.width, room.rect.depth) >= 9, room.name


def test_skeld_cafeteria_is_central(skeld: MapSpec) -> None:
    cx, cz = skeld.room("cafeteria").rect.center
    assert abs(cx) <= 2 and abs(cz) <= 2


def test_skeld_has_twenty_stations_spread_over_rooms(skeld: MapSpec) -> None:
    assert sorted(s.id for s in skeld.stations) == list(range(20))
    assert len({s.name for s in skeld.stations}) == 20
    rooms_with_tasks = {s.room for s in skeld.stations}
    assert rooms_with_tasks == SKELD_ROOMS
    for station in skeld.stations:
        assert len(station.name) <= 25
        assert skeld.room(station.room).rect.contains(station.cell)


def test_skeld_meeting_area(skeld: MapSpec) -> None:
    cafeteria = skeld.room("cafeteria").rect
    assert cafeteria.contains(skeld.emergency_button)
    assert len(skeld.seats) >= 8
    assert len(set(skeld.seats)) == len(skeld.seats)
    bx, bz = skeld.emergency_button
    for x, z in skeld.seats:
        assert cafeteria.contains((x, z))
        assert 2 <= abs(x - bx) + abs(z - bz) <= 4  # a ring around the button


def test_skeld_corridors_are_three_wide(skeld: MapSpec) -> None:
    for corridor in skeld.corridors:
        assert min(corridor.rect.width, corridor.rect.depth) == 3, corridor.name


def test_skeld_palettes_are_distinct(skeld: MapSpec) -> None:
    floors = [room.floor for room in skeld.rooms]
    walls = [room.wall for room in skeld.rooms]
    assert len(set(floors)) == len(floors)
    assert len(set(walls)) == len(walls)
    corridor_blocks = {c.floor for c in skeld.corridors} | {c.wall for c in skeld.corridors}
    assert len({c.floor for c in skeld.corridors}) == 1  # one plain corridor palette
    assert not corridor_blocks & (set(floors) | set(walls))
    special = {STATION_BLOCK, BUTTON_BLOCK, skeld.ghost_floor, skeld.ghost_wall}
    assert not special & (set(floors) | set(walls) | corridor_blocks)


@pytest.mark.parametrize("name", packaged_maps())
def test_packaged_maps_blocks_exist_in_minecraft_1_20_1(name: str) -> None:
    ship = load_map(name)
    paths_file = MC_DATA / "data" / "dataPaths.json"
    if not paths_file.is_file():
        pytest.skip("node_modules/minecraft-data is not installed")
    blocks_dir = json.loads(paths_file.read_text())["pc"]["1.20.1"]["blocks"]
    blocks = json.loads((MC_DATA / "data" / blocks_dir / "blocks.json").read_text())
    by_name = {b["name"]: b for b in blocks}
    used = {STATION_BLOCK, BUTTON_BLOCK, ship.ghost_floor, ship.ghost_wall, ship.ghost_ceiling}
    used |= {room.floor for room in ship.rooms} | {room.wall for room in ship.rooms}
    used |= {c.floor for c in ship.corridors} | {c.wall for c in ship.corridors}
    for block in sorted(used):
        assert block in by_name, f"{name}: {block} is not a 1.20.1 block"
        # Full, opaque cubes: walkable floors and walls that block sight.
        assert by_name[block]["boundingBox"] == "block", block
        assert not by_name[block]["transparent"], block


def test_skeld_fits_in_the_loaded_area(skeld: MapSpec) -> None:
    rects = [r.rect for r in skeld.rooms] + [c.rect for c in skeld.corridors]
    for rect in [*rects, skeld.ghost_area]:
        outer = rect.expanded(1)
        assert max(-outer.x0, outer.x1, -outer.z0, outer.z1) <= WORLD_LIMIT


def test_skeld_ghost_area_is_apart_and_roomy(skeld: MapSpec) -> None:
    assert skeld.ghost_area.area >= 8
    outer = skeld.ghost_area.expanded(1)
    rects = [r.rect for r in skeld.rooms] + [c.rect for c in skeld.corridors]
    for rect in rects:
        assert not outer.overlaps(rect.expanded(1))


def test_spec_is_frozen(skeld: MapSpec) -> None:
    with pytest.raises(ValidationError):
        skeld.name = "other"  # type: ignore[misc]


def test_every_field_is_documented() -> None:
    from world import spec as module

    for model in (module.Rect, module.Room, module.Corridor, module.Station, module.MapSpec):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no docstring"


# -- loading --------------------------------------------------------------------


def test_unknown_map_name() -> None:
    with pytest.raises(MapSpecError, match="no packaged map called 'nowhere'"):
        load_map("nowhere")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MapSpecError, match="does not exist"):
        load_map(str(tmp_path / "none.yaml"))


def test_bad_yaml(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("rooms: [\n")
    with pytest.raises(MapSpecError, match="not valid YAML"):
        load_map(str(path))


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(MapSpecError, match="mapping"):
        load_map(str(path))


def test_load_from_path_round_trip(tmp_path: Path, skeld_data: dict[str, Any]) -> None:
    path = tmp_path / "copy.yaml"
    path.write_text(yaml.safe_dump(skeld_data))
    assert load_map(str(path)) == load_map("skeld")


# -- pydantic-level errors name the field ---------------------------------------


def test_reversed_rect_names_room_and_field(skeld_data: dict[str, Any]) -> None:
    rect = _room(skeld_data, "weapons")["rect"]
    rect["x0"], rect["x1"] = rect["x1"], rect["x0"]
    message = _refused(skeld_data)
    assert "rooms[1] ('weapons').rect" in message
    assert "x0" in message and "x1" in message


def test_missing_field_is_named(skeld_data: dict[str, Any]) -> None:
    del _room(skeld_data, "admin")["floor"]
    message = _refused(skeld_data)
    assert "('admin').floor" in message
    assert "Field required" in message


def test_unknown_field_is_named(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 3)["colour"] = "red"
    message = _refused(skeld_data)
    assert "stations[3] ('Download weapons data').colour" in message


def test_bad_cell_type_is_named(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 7)["cell"] = [1.5, 2]
    message = _refused(skeld_data)
    assert "stations[7] ('Stabilize steering').cell[0]" in message


def test_bad_block_name_is_named(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "reactor")["wall"] = "Black Concrete"
    message = _refused(skeld_data)
    assert "('reactor').wall" in message


def test_wall_height_too_low(skeld_data: dict[str, Any]) -> None:
    skeld_data["wall_height"] = 1
    assert "wall_height" in _refused(skeld_data)


# -- geometric errors name the room, station or area ----------------------------


def test_overlapping_rooms(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "medbay")["rect"] = {"x0": -20, "z0": -2, "x1": -12, "z1": 6}
    message = _refused(skeld_data)
    assert "'security'" in message and "'medbay'" in message and "overlap" in message


def test_walls_touching_count_as_overlap(skeld_data: dict[str, Any]) -> None:
    # admin x 12..20 has its east wall at x=21; navigation's west wall would be x=21 too.
    _room(skeld_data, "navigation")["rect"]["x0"] = 22
    message = _refused(skeld_data)
    assert "'admin'" in message and "'navigation'" in message


def test_unreachable_room(skeld_data: dict[str, Any]) -> None:
    skeld_data["corridors"] = [
        c for c in skeld_data["corridors"] if c["name"] not in {"weapons_o2", "o2_navigation"}
    ]
    message = _refused(skeld_data)
    assert "room 'o2'" in message and "cannot be reached" in message


def test_disconnected_corridor(skeld_data: dict[str, Any]) -> None:
    skeld_data["corridors"].append(
        {"name": "nowhere", "rect": {"x0": 40, "z0": 40, "x1": 42, "z1": 44},
         "floor": "smooth_stone", "wall": "stone_bricks"}
    )  # fmt: skip
    assert "corridor 'nowhere'" in _refused(skeld_data)


def test_station_outside_its_room(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 4)["cell"] = [15, -15]  # in weapons, not o2
    message = _refused(skeld_data)
    assert "station 4 ('Clean O2 filter')" in message
    assert "outside its room 'o2'" in message


def test_station_on_a_wall(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 17)["cell"] = [-35, 0]  # reactor's west wall
    message = _refused(skeld_data)
    assert "station 17 ('Start reactor')" in message and "'reactor'" in message


def test_duplicate_room_names(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "admin")["name"] = "weapons"
    assert "room 'weapons' is defined twice" in _refused(skeld_data)


def test_duplicate_corridor_names(skeld_data: dict[str, Any]) -> None:
    skeld_data["corridors"][1]["name"] = skeld_data["corridors"][0]["name"]
    assert "is defined twice" in _refused(skeld_data)


def test_duplicate_station_ids(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 5)["id"] = 4
    message = _refused(skeld_data)
    assert "station 4" in message and "more than once" in message


def test_station_ids_must_be_contiguous(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 19)["id"] = 25
    assert "station 25 ('Submit scan')" in _refused(skeld_data)


def test_duplicate_station_names(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 12)["name"] = "swipe CARD"
    assert "station 12 ('swipe CARD')" in _refused(skeld_data)


def test_station_in_unknown_room(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 9)["room"] = "kitchen"
    message = _refused(skeld_data)
    assert "station 9 ('Download comms data')" in message and "unknown room 'kitchen'" in message


def test_two_stations_on_one_cell(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 1)["cell"] = _station(skeld_data, 0)["cell"]
    assert "already holds station 0" in _refused(skeld_data)


def test_station_on_the_button(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 0)["cell"] = skeld_data["emergency_button"]
    assert "station 0 ('Empty garbage')" in _refused(skeld_data)


def test_station_on_a_seat(skeld_data: dict[str, Any]) -> None:
    _station(skeld_data, 0)["cell"] = skeld_data["seats"][2]
    assert "meeting seat" in _refused(skeld_data)


def test_unknown_meeting_room(skeld_data: dict[str, Any]) -> None:
    skeld_data["meeting_room"] = "mess_hall"
    message = _refused(skeld_data)
    assert "meeting_room 'mess_hall' is not a room" in message
    assert "set `meeting_room` to one of: cafeteria, weapons" in message


def test_the_old_cafeteria_key_is_read_as_meeting_room(skeld_data: dict[str, Any]) -> None:
    # Maps and the map specs recorded in game logs before the rename use `cafeteria`.
    old = {("cafeteria" if k == "meeting_room" else k): v for k, v in skeld_data.items()}
    assert parse_map(old, "old").meeting_room == "cafeteria"
    old["cafeteria"] = "mess_hall"
    assert "meeting_room 'mess_hall' is not a room" in _refused(old)
    both = {**skeld_data, "cafeteria": "cafeteria"}
    assert "keep only `meeting_room`" in _refused(both)


def test_button_outside_cafeteria(skeld_data: dict[str, Any]) -> None:
    skeld_data["emergency_button"] = [16, 0]  # in admin
    message = _refused(skeld_data)
    assert "emergency button" in message and "meeting room 'cafeteria'" in message


def test_seat_outside_cafeteria(skeld_data: dict[str, Any]) -> None:
    skeld_data["seats"][3] = [0, 9]  # in the corridor to storage
    message = _refused(skeld_data)
    assert "seat 3" in message and "meeting room 'cafeteria'" in message


def test_too_few_seats(skeld_data: dict[str, Any]) -> None:
    skeld_data["seats"] = skeld_data["seats"][:7]
    message = _refused(skeld_data)
    assert "only 7 seats" in message and "at least 8" in message


def test_duplicate_seats(skeld_data: dict[str, Any]) -> None:
    skeld_data["seats"].append(skeld_data["seats"][0])
    assert "listed twice" in _refused(skeld_data)


def test_ghost_area_overlapping_the_ship(skeld_data: dict[str, Any]) -> None:
    skeld_data["ghost_area"] = {"x0": 26, "z0": 0, "x1": 30, "z1": 4}
    message = _refused(skeld_data)
    assert "ghost area" in message and "'navigation'" in message


def test_ghost_area_too_small(skeld_data: dict[str, Any]) -> None:
    skeld_data["ghost_area"] = {"x0": 50, "z0": 50, "x1": 51, "z1": 52}
    assert "ghost area" in _refused(skeld_data)


def test_room_outside_the_loaded_area(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "navigation")["rect"] = {"x0": 52, "z0": -6, "x1": 60, "z1": 6}
    message = _refused(skeld_data)
    assert "room 'navigation'" in message and f"[-{WORLD_LIMIT}, {WORLD_LIMIT}]" in message


def test_ghost_area_outside_the_loaded_area(skeld_data: dict[str, Any]) -> None:
    skeld_data["ghost_area"] = {"x0": 56, "z0": 56, "x1": 60, "z1": 60}
    assert "the ghost area" in _refused(skeld_data)


def test_room_floor_must_be_its_own(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "shields")["floor"] = _room(skeld_data, "o2")["floor"]
    message = _refused(skeld_data)
    assert "room 'shields'" in message and "'o2'" in message


def test_room_floor_differs_from_corridors(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "storage")["floor"] = "smooth_stone"
    assert "room 'storage'" in _refused(skeld_data)


def test_reserved_blocks(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "electrical")["floor"] = "emerald_block"
    assert "room 'electrical'" in _refused(skeld_data)


def test_reserved_room_name(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "admin")["name"] = "hallway"
    skeld_data["stations"] = [s for s in skeld_data["stations"] if s["room"] != "admin"]
    assert "room 'hallway' uses a reserved name" in _refused(skeld_data)


def test_direct_construction_validates_too(skeld_data: dict[str, Any]) -> None:
    skeld_data["seats"] = skeld_data["seats"][:3]
    with pytest.raises(ValidationError, match="only 3 seats"):
        MapSpec.model_validate(skeld_data)


def test_rect_helpers() -> None:
    rect = Rect(x0=0, z0=0, x1=2, z1=1)
    assert rect.area == 6 and rect.width == 3 and rect.depth == 2
    assert rect.center == (1.5, 1.0)
    assert len(list(rect.ring())) == 5 * 4 - 6
    assert rect.overlaps(Rect(x0=2, z0=1, x1=5, z1=5))
    assert not rect.overlaps(Rect(x0=3, z0=0, x1=5, z1=5))
    with pytest.raises(ValidationError, match="z0"):
        Rect(x0=0, z0=3, x1=0, z1=2)


# -- room aliases -----------------------------------------------------------------


def test_skeld_carries_the_spoken_room_names(skeld: MapSpec) -> None:
    aliases = skeld.room_aliases()
    assert aliases["oxygen"] == "o2" and aliases["02"] == "o2"
    assert aliases["elec"] == "electrical" and aliases["comms"] == "communications"
    assert aliases["caf"] == "cafeteria" and aliases["med_bay"] == "medbay"
    assert len(aliases) == 30
    assert not set(aliases) & {room.name for room in skeld.rooms}


@pytest.mark.parametrize("alias", ["Elec", "elec tric", "élec", "-elec", ""])
def test_an_alias_must_be_a_lowercase_name(skeld_data: dict[str, Any], alias: str) -> None:
    _room(skeld_data, "electrical")["aliases"] = ["sparky", alias]
    message = _refused(skeld_data)
    assert f"room 'electrical': alias '{alias}' is not a lowercase name" in message


def test_an_alias_names_one_room_only(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "security")["aliases"] = ["sec", "elec"]
    message = _refused(skeld_data)
    assert "alias 'elec'" in message and "also an alias of room 'electrical'" in message


def test_an_alias_is_listed_once(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "security")["aliases"] = ["sec", "sec"]
    assert "room 'security': alias 'sec' is listed twice" in _refused(skeld_data)


def test_an_alias_is_not_a_room_name(skeld_data: dict[str, Any]) -> None:
    _room(skeld_data, "admin")["aliases"] = ["storage"]
    message = _refused(skeld_data)
    assert "room 'admin': alias 'storage' is another room's name" in message
    _room(skeld_data, "admin")["aliases"] = ["admin"]
    assert "alias 'admin' is the room's own name" in _refused(skeld_data)


@pytest.mark.parametrize("alias", ["hall", "corridor", "hallway", "ghost_area"])
def test_an_alias_is_not_a_corridor_word(skeld_data: dict[str, Any], alias: str) -> None:
    _room(skeld_data, "admin")["aliases"] = [alias]
    assert f"alias '{alias}' is a name for the corridors" in _refused(skeld_data)


def test_aliases_default_to_none(tiny: MapSpec) -> None:
    assert tiny.room_aliases() == {}
