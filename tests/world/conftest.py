"""Shared fixtures for the world tests: the shipped map and a tiny hand-made one."""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from importlib import resources
from typing import Any

import pytest
import yaml

from controller.protocol import Vec3
from world.geometry import ShipGeometry
from world.spec import Cell, MapSpec, load_map, parse_map


def _skeld_raw() -> dict[str, Any]:
    text = resources.files("world").joinpath("maps", "skeld.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


_RAW = _skeld_raw()


@pytest.fixture
def skeld_data() -> dict[str, Any]:
    """A fresh, mutable copy of the shipped map's YAML data."""
    return copy.deepcopy(_RAW)


@pytest.fixture(scope="session")
def skeld() -> MapSpec:
    """The shipped map, validated."""
    return load_map("skeld")


@pytest.fixture(scope="session")
def geometry(skeld: MapSpec) -> ShipGeometry:
    """Geometry of the shipped map (shared: its caches only speed things up)."""
    return ShipGeometry(skeld)


def _tiny_raw() -> dict[str, Any]:
    """A minimal valid map: a 9x9 cafeteria, a corridor east, a 5x5 storage room.

    Layout (x right, z down)::

        cafeteria x 0..8, z 0..8     corridor x 9..11, z 1..3     storage x 12..16, z 0..4
    """

    def rect(x0: int, z0: int, x1: int, z1: int) -> dict[str, int]:
        return {"x0": x0, "z0": z0, "x1": x1, "z1": z1}

    return {
        "name": "tiny",
        "floor_y": 64,
        "wall_height": 3,
        "meeting_room": "cafeteria",
        "rooms": [
            {
                "name": "cafeteria",
                "rect": rect(0, 0, 8, 8),
                "floor": "oak_planks",
                "wall": "white_concrete",
            },
            {
                "name": "storage",
                "rect": rect(12, 0, 16, 4),
                "floor": "spruce_planks",
                "wall": "brown_concrete",
            },
        ],
        "corridors": [
            {
                "name": "hall",
                "rect": rect(9, 1, 11, 3),
                "floor": "smooth_stone",
                "wall": "stone_bricks",
            },
        ],
        "stations": [
            {"id": 0, "name": "Sweep", "room": "cafeteria", "cell": [1, 7]},
            {"id": 1, "name": "Count boxes", "room": "storage", "cell": [16, 4]},
        ],
        "emergency_button": [4, 4],
        "seats": [[2, 4], [6, 4], [4, 2], [4, 6], [2, 2], [6, 6], [2, 6], [6, 2]],
        "ghost_area": rect(30, 30, 33, 33),
    }


@pytest.fixture
def tiny_data() -> dict[str, Any]:
    """A fresh, mutable copy of the tiny map's data (see `_tiny_raw`)."""
    return _tiny_raw()


@pytest.fixture
def tiny() -> MapSpec:
    """The tiny map, validated."""
    return parse_map(_tiny_raw(), "tiny")


def _touches_square(a: Vec3, b: Vec3, cell: Cell) -> bool:
    """Whether the closed segment a-b meets the closed unit square of `cell` (exact)."""
    px, pz = Fraction(a[0]), Fraction(a[2])
    dx, dz = Fraction(b[0]) - px, Fraction(b[2]) - pz
    lo, hi = Fraction(0), Fraction(1)
    for p, d, c in ((px, dx, cell[0]), (pz, dz, cell[1])):
        if d == 0:
            if not c <= p <= c + 1:
                return False
            continue
        t0, t1 = (c - p) / d, (c + 1 - p) / d
        lo, hi = max(lo, min(t0, t1)), min(hi, max(t0, t1))
    return lo <= hi


def _los_oracle(geometry: ShipGeometry, a: Vec3, b: Vec3) -> bool:
    """Brute-force line of sight: no non-walkable closed square touches the segment."""
    xs = range(math.floor(min(a[0], b[0])) - 1, math.floor(max(a[0], b[0])) + 2)
    zs = range(math.floor(min(a[2], b[2])) - 1, math.floor(max(a[2], b[2])) + 2)
    for cell in itertools.product(xs, zs):
        if not geometry.is_walkable(cell) and _touches_square(a, b, cell):
            return False
    return True


@pytest.fixture(scope="session")
def los_oracle() -> Callable[[ShipGeometry, Vec3, Vec3], bool]:
    """An exact, slow reference for `ShipGeometry.line_of_sight`."""
    return _los_oracle
