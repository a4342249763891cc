"""Property tests of line of sight and walking distances (needs hypothesis)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from controller.protocol import Vec3  # noqa: E402
from world.geometry import ShipGeometry, cell_of  # noqa: E402
from world.spec import load_map  # noqa: E402

GEOMETRY = ShipGeometry(load_map("skeld"))
X0, Z0, X1, Z1 = GEOMETRY.bounds

# Mix arbitrary floats with grid lines, cell centres and quarter points.
xs = st.one_of(
    st.floats(X0, X1, allow_nan=False),
    st.integers(4 * X0, 4 * X1).map(lambda v: v / 4),
)
zs = st.one_of(
    st.floats(Z0, Z1, allow_nan=False),
    st.integers(4 * Z0, 4 * Z1).map(lambda v: v / 4),
)
positions = st.tuples(xs, st.just(65.0), zs)
offsets = st.one_of(st.floats(-6, 6, allow_nan=False), st.integers(-24, 24).map(lambda v: v / 4))
cells = st.sampled_from(
    GEOMETRY.walkable_cells_in("cafeteria")
    + GEOMETRY.walkable_cells_in("hallway")
    + [c for room in GEOMETRY.rooms for c in GEOMETRY.walkable_cells_in(room)[::7]]
)


@given(positions, positions)
@settings(max_examples=400, deadline=None, database=None)
def test_line_of_sight_is_symmetric(
    a: tuple[float, float, float], b: tuple[float, float, float]
) -> None:
    assert GEOMETRY.line_of_sight(a, b) is GEOMETRY.line_of_sight(b, a)


@given(positions, positions)
@settings(max_examples=300, deadline=None, database=None)
def test_sight_implies_open_endpoints_and_a_walk(
    a: tuple[float, float, float], b: tuple[float, float, float]
) -> None:
    if not GEOMETRY.line_of_sight(a, b):
        return
    assert GEOMETRY.is_walkable(cell_of(a)) and GEOMETRY.is_walkable(cell_of(b))
    length = GEOMETRY.path_length(a, b)
    assert length is not None  # seen means reachable: the segment itself is open floor
    assert length >= math.dist(cell_of(a), cell_of(b)) - 1e-9


@given(cells, cells)
@settings(max_examples=300, deadline=None, database=None)
def test_path_length_is_a_metric(a: tuple[int, int], b: tuple[int, int]) -> None:
    pa, pb = GEOMETRY.stand_pos(a), GEOMETRY.stand_pos(b)
    ab = GEOMETRY.path_length(pa, pb)
    ba = GEOMETRY.path_length(pb, pa)
    assert ab is not None and ba is not None
    assert ab == pytest.approx(ba)
    assert ab >= math.dist(a, b) - 1e-9
    assert (ab == 0) == (a == b)


@given(a=positions, dx=offsets, dz=offsets)
@settings(max_examples=600, deadline=None, database=None)
def test_line_of_sight_matches_the_oracle(
    a: tuple[float, float, float],
    dx: float,
    dz: float,
    los_oracle: Callable[[ShipGeometry, Vec3, Vec3], bool],
) -> None:
    b = (a[0] + dx, a[1], a[2] + dz)
    assert GEOMETRY.line_of_sight(a, b) is los_oracle(GEOMETRY, a, b)
