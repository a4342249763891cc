"""The players' camera is one piece of world knowledge: perception and the fake world's
picture use the same field of view."""

from __future__ import annotations

import math

import pytest

from controller import perception
from controller.worlds import sketch
from world import camera
from world.geometry import ShipGeometry


def test_the_horizontal_fov_follows_from_the_vertical_one_and_the_frame() -> None:
    assert camera.VERTICAL_FOV_DEG == 70.0
    assert (camera.FRAME_WIDTH, camera.FRAME_HEIGHT) == (640, 360)
    assert pytest.approx(102.45, abs=0.01) == camera.HORIZONTAL_FOV_DEG
    # a square frame spans the vertical FOV both ways
    assert camera.horizontal_fov_deg(70.0, 100, 100) == pytest.approx(70.0)


def test_perception_and_the_sketch_picture_share_the_camera() -> None:
    assert perception.HORIZONTAL_FOV_DEG == camera.HORIZONTAL_FOV_DEG
    assert perception.VERTICAL_FOV_DEG == camera.VERTICAL_FOV_DEG
    assert sketch.H_FOV == perception.HORIZONTAL_FOV_DEG
    assert (sketch.HEIGHT, sketch.WIDTH) == (camera.FRAME_HEIGHT, camera.FRAME_WIDTH)


@pytest.mark.parametrize("bearing", [10.0, 40.0, 49.0, 53.0, 60.0, -49.0, -53.0])
def test_a_player_is_drawn_exactly_when_perception_says_it_is_in_view(
    geometry: ShipGeometry, bearing: float
) -> None:
    eye = geometry.room_center("cafeteria")
    yaw = 0.0  # facing +z
    fx, fz = perception.facing(yaw)
    # turn the facing by `bearing` degrees and stand 4 blocks away that way
    r = math.radians(bearing)
    dx, dz = fx * math.cos(r) - fz * math.sin(r), fx * math.sin(r) + fz * math.cos(r)
    other = (eye[0] + 4 * dx, eye[1], eye[2] + 4 * dz)
    assert geometry.line_of_sight(eye, other)
    picture = sketch.sketch(geometry, eye, yaw, {"red": other}, {})
    drawn = bool((picture == sketch.COLORS["red"]).all(axis=2).any())
    assert drawn == perception.in_cone(eye, yaw, other), bearing
