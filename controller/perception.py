"""Perception: who can see whom, as the camera shows it and all around.

Two questions are kept apart because they answer different things:

* **field of view** (`sees`): the target is inside the camera's horizontal field of
  view, within `range` blocks and in line of sight. This is what the first-person
  frame shows, and it is the only thing an `ego` agent is told.
* **proximity** (`near`): the target is within `range` blocks in any direction and in
  line of sight, whatever the player faces. It answers "who could have noticed" and
  is used for audits and privileged views, never for an ego agent's knowledge.

The camera is Minecraft's default: a 70 degree vertical field of view on a 640x360
frame, so the horizontal field of view is `2 * atan(tan(35 deg) * 640 / 360)`, about
102.4 degrees. Those numbers are world knowledge (`world.camera`, re-exported here),
shared with the frames the fake world draws (`controller.worlds.sketch`). Heights are
ignored (one floor, walls above eye level), as in `world.geometry`. Yaw follows
Minecraft: 0 faces +Z (south), 90 faces -X (west).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from world.camera import (
    FRAME_HEIGHT,
    FRAME_WIDTH,
    HORIZONTAL_FOV_DEG,
    VERTICAL_FOV_DEG,
    horizontal_fov_deg,
)
from world.geometry import ShipGeometry

Vec3 = tuple[float, float, float]


def facing(yaw_deg: float) -> tuple[float, float]:
    """The unit (x, z) direction a player with this Minecraft yaw looks towards."""
    r = math.radians(yaw_deg)
    return (-math.sin(r), math.cos(r))


def in_cone(eye: Vec3, yaw_deg: float, target: Vec3, fov_deg: float = HORIZONTAL_FOV_DEG) -> bool:
    """Whether `target` lies inside the horizontal view cone of a player at `eye`.

    A target at the eye's own position counts as inside (it is at arm's length).
    """
    dx, dz = target[0] - eye[0], target[2] - eye[2]
    dist = math.hypot(dx, dz)
    if dist < 1e-9:
        return True
    fx, fz = facing(yaw_deg)
    cos_angle = (dx * fx + dz * fz) / dist
    return cos_angle >= math.cos(math.radians(fov_deg) / 2) - 1e-12


def bearing_deg(eye: Vec3, yaw_deg: float, target: Vec3) -> float:
    """Angle between the view direction and the target, in degrees (0..180)."""
    dx, dz = target[0] - eye[0], target[2] - eye[2]
    dist = math.hypot(dx, dz)
    if dist < 1e-9:
        return 0.0
    fx, fz = facing(yaw_deg)
    c = max(-1.0, min(1.0, (dx * fx + dz * fz) / dist))
    return math.degrees(math.acos(c))


class Sight(BaseModel):
    """What every viewer could perceive at one moment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sees: dict[str, list[str]]
    """Viewer -> players inside its field of view (cone, range, line of sight)."""
    near: dict[str, list[str]]
    """Viewer -> players within range all around (line of sight), whatever it faces."""
    bodies: dict[str, list[str]] = {}
    """Viewer -> victims whose bodies are inside its field of view."""
    bodies_near: dict[str, list[str]] = {}
    """Viewer -> victims whose bodies are within range all around."""

    def joined(self, other: Sight) -> Sight:
        """This sight and `other`'s, for viewers of both (`other`'s lists win for a viewer
        in both); e.g. the living's logged sight and the ghosts' own."""
        return Sight(
            sees={**self.sees, **other.sees},
            near={**self.near, **other.near},
            bodies={**self.bodies, **other.bodies},
            bodies_near={**self.bodies_near, **other.bodies_near},
        )


class Perception:
    """Answers who sees whom on one ship.

    Args:
        geometry: The ship (walls block sight).
        range: How far (blocks) a player can see, in the cone and all around.
        fov_deg: Horizontal field of view of the camera.
    """

    def __init__(
        self, geometry: ShipGeometry, range: float, fov_deg: float = HORIZONTAL_FOV_DEG
    ) -> None:
        self.geometry = geometry
        self.range = range
        self.fov_deg = fov_deg

    def near(self, eye: Vec3, target: Vec3) -> bool:
        """Within range in any direction and in line of sight."""
        return self.geometry.can_see(eye, target, self.range)

    def sees(self, eye: Vec3, yaw_deg: float, target: Vec3) -> bool:
        """Inside the camera's field of view, within range and in line of sight."""
        return in_cone(eye, yaw_deg, target, self.fov_deg) and self.near(eye, target)

    def snapshot(
        self,
        viewers: Mapping[str, tuple[Vec3, float]],
        targets: Mapping[str, Vec3],
        bodies: Mapping[str, Vec3] | None = None,
    ) -> Sight:
        """Who among `targets` (and which `bodies`) each viewer perceives.

        Args:
            viewers: Viewer -> (position, yaw).
            targets: Player -> position (a viewer is never listed as seeing itself).
            bodies: Victim -> body position.
        """
        sees: dict[str, list[str]] = {}
        near: dict[str, list[str]] = {}
        bsees: dict[str, list[str]] = {}
        bnear: dict[str, list[str]] = {}
        for a, (pos, yaw) in viewers.items():
            close = [b for b, tpos in targets.items() if b != a and self.near(pos, tpos)]
            near[a] = close
            sees[a] = [b for b in close if in_cone(pos, yaw, targets[b], self.fov_deg)]
            bclose = [v for v, bpos in sorted((bodies or {}).items()) if self.near(pos, bpos)]
            bnear[a] = bclose
            bsees[a] = [v for v in bclose if in_cone(pos, yaw, (bodies or {})[v], self.fov_deg)]
        return Sight(sees=sees, near=near, bodies=bsees, bodies_near=bnear)


__all__ = [
    "FRAME_HEIGHT",
    "FRAME_WIDTH",
    "HORIZONTAL_FOV_DEG",
    "VERTICAL_FOV_DEG",
    "Perception",
    "Sight",
    "bearing_deg",
    "facing",
    "horizontal_fov_deg",
    "in_cone",
]
