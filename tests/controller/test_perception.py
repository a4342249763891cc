"""Field of view and proximity are different questions with different answers."""

from __future__ import annotations

import math

import pytest

from controller.perception import HORIZONTAL_FOV_DEG, bearing_deg, facing, in_cone


def test_horizontal_fov_matches_a_640x360_frame_with_70_degrees_vertical() -> None:
    assert pytest.approx(102.45, abs=0.1) == HORIZONTAL_FOV_DEG


@pytest.mark.parametrize(
    ("yaw", "direction"), [(0, (0, 1)), (90, (-1, 0)), (180, (0, -1)), (-90, (1, 0))]
)
def test_yaw_follows_minecraft(yaw: float, direction: tuple[int, int]) -> None:
    fx, fz = facing(yaw)
    assert (round(fx, 9), round(fz, 9)) == (float(direction[0]), float(direction[1]))


def test_a_player_behind_is_outside_the_cone_and_one_ahead_inside() -> None:
    eye = (0.0, 64.0, 0.0)
    assert in_cone(eye, 0.0, (0.0, 64.0, 5.0))
    assert not in_cone(eye, 0.0, (0.0, 64.0, -5.0))
    # Just inside and just outside half the horizontal FOV.
    half = math.radians(HORIZONTAL_FOV_DEG / 2)
    inside = (-math.sin(half - 0.01) * 5, 64.0, math.cos(half - 0.01) * 5)
    outside = (-math.sin(half + 0.01) * 5, 64.0, math.cos(half + 0.01) * 5)
    assert in_cone(eye, 0.0, inside)
    assert not in_cone(eye, 0.0, outside)
    assert bearing_deg(eye, 0.0, (0.0, 64.0, -5.0)) == pytest.approx(180.0)
