"""The top-down replay video (`mineamongus replay`): every seat's label is its own, and
bodies stand out on every floor."""

from __future__ import annotations

import numpy as np
import pytest

from controller.config import DEFAULT_COLORS
from controller.events import Positions
from controller.replay import BODY_HALO, BODY_RING, SCALE, MapPainter, seat_labels
from controller.worlds.sketch import COLORS
from world.geometry import ShipGeometry
from world.spec import load_map


@pytest.fixture(scope="module")
def painter() -> MapPainter:
    return MapPainter(ShipGeometry(load_map("skeld")), DEFAULT_COLORS)


def test_every_seat_has_its_own_label() -> None:
    labels = seat_labels(DEFAULT_COLORS)
    assert len(set(labels.values())) == len(DEFAULT_COLORS)
    assert labels["blue"] != labels["black"]  # both were "BL"
    assert all(len(v) >= 2 and name.upper().startswith(v) for name, v in labels.items())
    odd = seat_labels(["cyan", "cyanide", "c"])
    assert len(set(odd.values())) == 3


def test_the_painter_labels_the_game_seats(painter: MapPainter) -> None:
    assert {painter.label(a) for a in DEFAULT_COLORS} == set(seat_labels(DEFAULT_COLORS).values())


@pytest.mark.parametrize("victim", DEFAULT_COLORS)
def test_a_body_stands_out_whatever_its_colour(painter: MapPainter, victim: str) -> None:
    geometry = painter.geometry
    nobody = Positions(step=1, tick=0, players={})
    empty = painter.paint(nobody, {}, "")
    for room in ("electrical", "cafeteria", "medbay", "storage"):
        pos = geometry.room_center(room)
        frame = painter.paint(nobody, {victim: pos}, "")
        px, pz = (int(v) for v in painter._xy(pos[0], pos[2]))
        r = 2 * SCALE
        box, base = frame[pz - r : pz + r, px - r : px + r], empty[pz - r : pz + r, px - r : px + r]
        changed = np.any(box != base, axis=2)
        # A marker of its own size on a white disc ringed in red, for any floor and colour
        # (a thin cross in the victim's colour vanished for black on a dark floor).
        assert changed.sum() >= 250, (room, int(changed.sum()))
        assert np.all(box == BODY_HALO, axis=2).sum() >= 40
        assert np.all(box == BODY_RING, axis=2).sum() >= 40
        assert np.all(box == COLORS[victim], axis=2).sum() >= 10
