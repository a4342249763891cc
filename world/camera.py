"""The players' camera: what a first-person frame spans.

World knowledge shared by everything that draws or reasons about a player's view:
perception (`controller.perception`: who is in the field of view), the Minecraft
renderer's frames (`bots/render.js`) and the fake world's synthetic picture
(`controller.worlds.sketch`). Keeping the numbers here means the picture an agent is
shown and what it is told it sees cannot drift apart.

The camera is Minecraft's default: a 70 degree vertical field of view ("Normal") on a
640x360 frame, so the horizontal field of view is `2 * atan(tan(35 deg) * 640 / 360)`,
about 102.4 degrees.
"""

from __future__ import annotations

import math

VERTICAL_FOV_DEG = 70.0
"""The renderer's vertical field of view (`bots/render.js`, Minecraft's "Normal")."""
FRAME_WIDTH = 640
"""Width of a first-person frame, in pixels."""
FRAME_HEIGHT = 360
"""Height of a first-person frame, in pixels."""


def horizontal_fov_deg(
    vertical_deg: float = VERTICAL_FOV_DEG, width: int = FRAME_WIDTH, height: int = FRAME_HEIGHT
) -> float:
    """The horizontal field of view of a perspective camera, in degrees.

    Args:
        vertical_deg: The vertical field of view.
        width: Frame width in pixels.
        height: Frame height in pixels.
    """
    half = math.radians(vertical_deg) / 2
    return math.degrees(2 * math.atan(math.tan(half) * width / height))


HORIZONTAL_FOV_DEG = horizontal_fov_deg()
"""About 102.4 degrees: what a 640x360 frame with a 70 degree vertical FOV spans."""

__all__ = [
    "FRAME_HEIGHT",
    "FRAME_WIDTH",
    "HORIZONTAL_FOV_DEG",
    "VERTICAL_FOV_DEG",
    "horizontal_fov_deg",
]
