"""A cheap synthetic first-person picture for the fake world.

Not Minecraft: sky above, the floor of the room the player stands in below, and
every player and body in its field of view and line of sight drawn as a coloured
block whose size falls with distance. It gives tests and fake-world games real
pixels that change with heading, room and company. The frame and its horizontal field
of view are the players' camera (`world.camera`), the ones perception uses.
"""

from __future__ import annotations

import hashlib
import io
import math
from pathlib import Path

import numpy as np
from PIL import Image

from controller.protocol import Vec3
from world.camera import FRAME_HEIGHT, FRAME_WIDTH, HORIZONTAL_FOV_DEG
from world.geometry import ShipGeometry, yaw_towards

HEIGHT, WIDTH = FRAME_HEIGHT, FRAME_WIDTH
H_FOV = HORIZONTAL_FOV_DEG
"""Horizontal field of view of the picture: the camera's (`world.camera`), so a player
drawn in a frame is one perception says is in the field of view (about 102.4 degrees)."""
SKY = (135, 180, 235)
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (200, 30, 30),
    "blue": (30, 60, 210),
    "green": (30, 150, 40),
    "pink": (240, 120, 190),
    "orange": (240, 140, 20),
    "yellow": (240, 230, 40),
    "black": (25, 25, 25),
    "white": (240, 240, 240),
}


def room_color(room: str) -> tuple[int, int, int]:
    """A stable floor colour per room name."""
    digest = hashlib.sha256(room.encode()).digest()
    return (60 + digest[0] % 160, 60 + digest[1] % 160, 60 + digest[2] % 160)


def _bearing(src: Vec3, yaw: float, dst: Vec3) -> float:
    """Degrees of `dst` right (+) or left (-) of where `src` looks."""
    return (yaw - yaw_towards(src, dst) + 540.0) % 360.0 - 180.0


def sketch(
    geometry: ShipGeometry,
    pos: Vec3,
    yaw: float,
    players: dict[str, Vec3],
    bodies: dict[str, Vec3],
    radius: float = 24.0,
) -> np.ndarray:
    """The picture seen from `pos` looking along `yaw` (uint8, 360x640x3).

    A thing is drawn when it is within `radius`, in line of sight and inside the
    horizontal field of view `H_FOV`; its column is proportional to its bearing.
    """
    img = np.empty((HEIGHT, WIDTH, 3), dtype=np.uint8)
    img[: HEIGHT // 2] = SKY
    img[HEIGHT // 2 :] = room_color(geometry.room_at(pos))
    things = [(name, p, False) for name, p in players.items()]
    things += [(name, p, True) for name, p in bodies.items()]
    things.sort(key=lambda t: -math.dist(pos, t[1]))  # far first, near drawn over
    for name, p, is_body in things:
        d = math.dist(pos, p)
        if d < 0.3 or d > radius or not geometry.line_of_sight(pos, p):
            continue
        bearing = _bearing(pos, yaw, p)
        if abs(bearing) > H_FOV / 2:
            continue
        cx = int(WIDTH / 2 + bearing / (H_FOV / 2) * WIDTH / 2)
        h = int(min(HEIGHT * 0.9, 260 / d))
        w = max(2, h // 3) if not is_body else max(4, h)
        top = HEIGHT // 2 - h // 2 if not is_body else HEIGHT // 2 + h // 4
        bottom = HEIGHT // 2 + h // 2
        color = COLORS.get(name, (128, 128, 128))
        img[max(0, top) : max(0, bottom), max(0, cx - w // 2) : max(0, cx + w // 2)] = color
    return img


def encode(rgb: np.ndarray, fmt: str, quality: int = 85) -> bytes:
    """JPEG or PNG bytes of a frame."""
    buf = io.BytesIO()
    image = Image.fromarray(rgb, "RGB")
    if fmt == "png":
        image.save(buf, format="PNG")
    else:
        image.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def save(data: bytes, path: Path) -> str:
    """Write bytes to a file, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)
