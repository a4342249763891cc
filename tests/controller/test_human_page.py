"""The human seat's map and task list: the ship from above, where the seat stands and
its own tasks, and nothing of any other player.

The page's drawing is checked in Chromium (tests/integration/test_human_seat.py); here
the data it is given: `map_sketch`, `seat_place`, and `/api/map` and `/api/state` of
the seat's server (its token and Host rules apply to the map too). The place a real
game gives the seat is checked against the record in
`tests/controller/test_human.py`.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient

from controller.agents.base import AgentDecision
from mineamongus.human import Desk, Question, map_sketch, seat_app, seat_place
from mineamongus.human_page import PAGE
from world.geometry import ShipGeometry
from world.spec import load_map

PORT = 8801
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "seat-token"
SPEC = load_map("skeld")
GEOMETRY = ShipGeometry(SPEC)
OTHERS = ("blue", "green", "pink", "orange", "yellow", "black", "white")


class _Codec:
    def decide(self, action: Any, phase: str, view_text: str, spec: dict[str, Any]) -> Any:
        return AgentDecision(module=str(action["module"]), raw=json.dumps(action))


def _known(role: str, tasks: list[int], done: list[int]) -> Any:
    """The fields of an observation the page's place is read from (and the desk's own)."""
    return SimpleNamespace(
        role=role,
        teammates=["white"] if role == "impostor" else [],
        chat=[],
        phase="free_roam",
        pos=(12.3456, 1.0, -3.21),
        yaw=91.26,
        room="admin",
        ghost=False,
        tasks=tasks,
        tasks_done=done,
    )


def _ask(desk: Desk, known: Any) -> Question:
    async def ask() -> Question:
        codec: Any = _Codec()
        place = seat_place(known, GEOMETRY)
        return desk.ask(known, "view", codec, {"phase": "free_roam"}, None, place)

    return asyncio.run(ask())


def test_the_map_is_the_ships_rooms_corridors_and_button_and_nothing_else() -> None:
    sketch = map_sketch(SPEC)
    assert [r["name"] for r in sketch["rooms"]] == [r.name for r in SPEC.rooms]
    assert sketch["rooms"][0]["rect"] == SPEC.rooms[0].rect.model_dump()
    assert len(sketch["corridors"]) == len(SPEC.corridors)
    assert sketch["button"] == list(SPEC.emergency_button)
    assert sketch["meeting_room"] == SPEC.meeting_room
    # No station (only the seat's own tasks are drawn) and no player.
    assert set(sketch) == {"name", "rooms", "corridors", "button", "meeting_room"}


def test_a_crewmates_place_lists_its_own_tasks_with_station_room_and_done() -> None:
    place = seat_place(_known("crewmate", [0, 7, 11], [7]), GEOMETRY)
    assert place["pos"] == [12.3456, 1.0, -3.21] and place["yaw"] == 91.3
    assert place["room"] == "admin" and place["ghost"] is False
    names = {s.id: s.name for s in SPEC.stations}
    assert place["tasks"] == [
        {
            "station": s,
            "name": names[s],
            "room": GEOMETRY.station_room(s),
            "cell": list(GEOMETRY.station_cell(s)),
            "done": s == 7,
        }
        for s in (0, 7, 11)
    ]


def test_an_impostor_is_given_no_task_list() -> None:
    assert seat_place(_known("impostor", [], []), GEOMETRY)["tasks"] == []


@pytest.fixture
def desk() -> Desk:
    return Desk("red", None, {"state": "ego"}, map_sketch(SPEC))


@pytest.fixture
def page(desk: Desk) -> TestClient:
    return TestClient(seat_app(desk, TOKEN, PORT), base_url=BASE)


def test_the_seats_page_serves_the_map_and_its_place_to_its_token_only(
    desk: Desk, page: TestClient
) -> None:
    _ask(desk, _known("crewmate", [0, 7], [0]))
    assert page.get("/api/map").status_code == 403
    assert page.get("/api/map", params={"token": "wrong"}).status_code == 403
    assert page.get("/api/map", headers={"Host": f"rebind.example:{PORT}"}).status_code == 421
    ship = page.get("/api/map", headers={"X-Seat-Token": TOKEN})
    assert ship.status_code == 200 and ship.json() == map_sketch(SPEC)
    state = page.get("/api/state", headers={"X-Seat-Token": TOKEN}).json()
    place = state["place"]
    assert place["room"] == "admin" and [(t["station"], t["done"]) for t in place["tasks"]] == [
        (0, True),
        (7, False),
    ]
    # Nothing of any other seat: no name, so no role and no position.
    shown = json.dumps({"place": place, "map": ship.json()})
    assert not any(other in shown for other in OTHERS)


def test_an_impostors_page_shows_no_task_list(desk: Desk, page: TestClient) -> None:
    _ask(desk, _known("impostor", [], []))
    state = page.get("/api/state", headers={"X-Seat-Token": TOKEN}).json()
    assert state["role"] == "impostor" and state["place"]["tasks"] == []


def test_before_the_first_question_the_page_has_the_map_but_no_place(
    desk: Desk, page: TestClient
) -> None:
    state = page.get("/api/state", headers={"X-Seat-Token": TOKEN}).json()
    assert state["place"] is None
    assert page.get("/api/map", headers={"X-Seat-Token": TOKEN}).json()["rooms"]


def test_the_page_draws_the_map_and_lists_the_tasks() -> None:
    for needle in ('id="map"', 'id="tasks"', 'id="tasks-note"', '"/api/map"', "drawPlace"):
        assert needle in PAGE, needle
    # Text the game supplies is set as text, never as markup.
    assert "innerHTML" not in PAGE
