"""End-to-end tests of first-person rendering: Xvfb, the Node renderers, real bots.

One Xvfb, one Node runtime (embedded server, eight bots) and one set of renderers are
shared by the module; tests run in file order and put back what they move.

Scene: a walled 13x13 room with a yellow/blue checkerboard floor. Red stands near the
south wall looking north over the empty room; the seven others stand in a row behind
it, out of its view.
Run: python -m pytest tests/integration/test_render.py -q -o log_cli=true
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from controller.bridge import BotSpec, BridgeError, NodeBridge, free_port
from controller.protocol import BlockPlacement, GotoStep, LowProgram, Teleport, TurnStep
from controller.xvfb import Xvfb

pytestmark = pytest.mark.integration

log = logging.getLogger("test_render")

ROOT = Path(__file__).resolve().parents[2]
VERSION = "1.20.1"
HOST = "127.0.0.1"
IDS = ["red", "blue", "green", "pink", "orange", "yellow", "black", "white"]
W, H = 640, 360
FLOOR_Y = 64
Y = 65.0
ROOM = 6  # interior x, z in [-ROOM, ROOM]; walls on the ring at distance ROOM + 1
RED_POS = (0.5, Y, 3.5)
RED_YAW = 180.0  # north, over the empty room
BLUE_FRONT = (0.5, Y, 0.5)  # 3 blocks in front of red's eyes
CARPET = (0, 65, -1)  # on the floor, 4 blocks in front of red


def start_positions() -> dict[str, tuple[float, float, float]]:
    """Red near the south wall, the others in a row behind it (south of it)."""
    out = {"red": RED_POS}
    for k, agent in enumerate(IDS[1:]):
        out[agent] = (-5.5 + 1.5 * k + (1.0 if k >= 4 else 0.0), Y, 5.5)
    return out


def room_blocks() -> list[BlockPlacement]:
    blocks = []
    for x in range(-ROOM - 1, ROOM + 2):
        for z in range(-ROOM - 1, ROOM + 2):
            wall = max(abs(x), abs(z)) == ROOM + 1
            floor = "yellow_concrete" if (x + z) % 2 else "blue_concrete"
            blocks.append(BlockPlacement(x=x, y=FLOOR_Y, z=z, block=floor))
            if wall:
                for y in (65, 66, 67):
                    blocks.append(BlockPlacement(x=x, y=y, z=z, block="white_concrete"))
    return blocks


@dataclass
class Scene:
    bridge: NodeBridge
    xvfb: Xvfb
    tmp: Path
    starts: dict[str, tuple[float, float, float]]

    def frame(self, agent: str = "red", name: str = "f") -> np.ndarray[Any, np.dtype[np.uint8]]:
        """Render one bot; return its frame (H x W x 3, top row first) from the raw file."""
        raw = self.tmp / f"{agent}-{name}.rgb"
        result = self.bridge.render([agent], {agent: {"raw": str(raw)}})
        assert result["errors"] == {}, result
        data = raw.read_bytes()
        assert len(data) == W * H * 3
        return np.frombuffer(data, dtype=np.uint8).reshape(H, W, 3)

    def wait_seen(self, agent: str, by: str, pos: tuple[float, float, float]) -> None:
        """Until `by`'s client knows `agent` at `pos` (the renderer draws what it knows)."""
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            seen = self.bridge.inspect()["bots"][by]["sees"].get(agent)
            if seen and max(abs(a - b) for a, b in zip(seen["pos"], pos, strict=True)) < 0.1:
                time.sleep(0.1)  # the heading arrives in the same tick
                return
            time.sleep(0.05)
        raise AssertionError(f"{by} never saw {agent} at {pos}")


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    tmp = tmp_path_factory.mktemp("render")
    xvfb = Xvfb(tmp / "xvfb.log")
    xvfb.start()
    bridge = NodeBridge(log_path=tmp / "node.log", env=xvfb.env())
    try:
        bridge.start()
        port = bridge.start_server(HOST, free_port(HOST), VERSION, (0.5, Y, 0.5), 4)
        bridge.set_blocks(room_blocks())
        starts = start_positions()
        bots = [
            BotSpec(id=a, username=a.capitalize(), pos=starts[a], yaw=RED_YAW if a == "red" else 0)
            for a in IDS
        ]
        bridge.connect(HOST, port, VERSION, bots)
        t0 = time.monotonic()
        init = bridge.render_init()
        log.info("render_init: %.1f s, %s", time.monotonic() - t0, init)
        assert init["errors"] == {}
        assert set(init["ready"]) == set(IDS)
        yield Scene(bridge, xvfb, tmp, starts)
    finally:
        bridge.close()
        xvfb.close()


def changed_fraction(
    a: np.ndarray[Any, np.dtype[np.uint8]], b: np.ndarray[Any, np.dtype[np.uint8]]
) -> float:
    """Fraction of pixels whose largest channel difference exceeds 24."""
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2)
    return float((diff > 24).mean())


def centre(img: np.ndarray[Any, np.dtype[np.uint8]]) -> np.ndarray[Any, np.dtype[np.uint8]]:
    return img[H // 4 : 3 * H // 4, W // 4 : 3 * W // 4]


def red_pixels(img: np.ndarray[Any, np.dtype[np.uint8]]) -> int:
    r, g, b = (img[..., i].astype(np.int16) for i in range(3))
    return int(((r > 120) & (r > 2 * g) & (r > 2 * b)).sum())


def test_frame_is_not_blank_and_upright(scene: Scene) -> None:
    img = scene.frame()
    assert img.std() > 20.0
    colours = np.unique(img.reshape(-1, 3), axis=0)
    assert len(colours) > 100
    # Sky (the viewer's light blue, 173 216 230) on top, floor and walls below.
    top = img[:10].reshape(-1, 3).mean(axis=0)
    assert np.allclose(top, (173, 216, 230), atol=12), top
    bottom = img[-10:].reshape(-1, 3).mean(axis=0)
    assert not np.allclose(bottom, (173, 216, 230), atol=30), bottom


def test_turning_90_degrees_changes_the_frame(scene: Scene) -> None:
    before = scene.frame(name="before-turn")
    report = scene.bridge.run_programs({"red": LowProgram(steps=[TurnStep(yaw=90.0)])}, 5000)
    assert report.outcomes["red"].status == "ok"
    turned = scene.frame(name="turned")
    scene.bridge.run_programs({"red": LowProgram(steps=[TurnStep(yaw=-90.0)])}, 5000)
    back = scene.frame(name="back")
    assert changed_fraction(before, turned) > 0.2
    assert changed_fraction(before, back) < 0.01  # same pose, same frame


def test_a_player_in_front_is_drawn(scene: Scene) -> None:
    empty = scene.frame(name="empty")
    again = scene.frame(name="empty-again")
    # Blue steps 3 blocks in front of red, facing it.
    scene.bridge.teleport({"blue": Teleport(pos=BLUE_FRONT, yaw=0.0)})
    scene.wait_seen("blue", "red", BLUE_FRONT)
    with_player = scene.frame(name="player")
    home = scene.starts["blue"]
    scene.bridge.teleport({"blue": Teleport(pos=home, yaw=0.0)})
    scene.wait_seen("blue", "red", home)
    gone = scene.frame(name="gone")

    noise = changed_fraction(centre(empty), centre(again))
    player = changed_fraction(centre(empty), centre(with_player))
    after = changed_fraction(centre(empty), centre(gone))
    log.info("centre changed: empty twice %.4f, player %.4f, moved away %.4f", noise, player, after)
    assert noise < 0.005
    assert after < 0.005
    # A player 3 blocks away covers a good part of the centre (~1.8 x 0.6 blocks).
    assert player > 0.05
    # Its colours are not the room's: the centre's histogram moves too.
    hist_empty = np.histogramdd(centre(empty).reshape(-1, 3), bins=4, range=[(0, 256)] * 3)[0]
    hist_player = np.histogramdd(centre(with_player).reshape(-1, 3), bins=4, range=[(0, 256)] * 3)[
        0
    ]
    moved = np.abs(hist_empty - hist_player).sum() / 2 / hist_empty.sum()
    assert moved > 0.05


def reddish(img: np.ndarray[Any, np.dtype[np.uint8]]) -> int:
    """Pixels of Red's shirt: strongly red, little green or blue."""
    r, g, b = (img[..., i].astype(np.int16) for i in range(3))
    return int(((r > 150) & (g < 90) & (b < 90)).sum())


def bluish(img: np.ndarray[Any, np.dtype[np.uint8]]) -> int:
    """Pixels of Blue's shirt: brighter and purer than the floor's blue concrete."""
    r, g, b = (img[..., i].astype(np.int16) for i in range(3))
    return int(((b > 170) & (r < 70) & (g < 90)).sum())


def test_players_wear_their_colour(scene: Scene) -> None:
    # White watches from beside red's spot, looking north; Red, then Blue, stands 3
    # blocks in front of it, facing it, then goes back out of its view.
    bridge = scene.bridge
    camera = (2.5, Y, 3.5)
    front = (2.5, Y, 0.5)
    bridge.teleport({"white": Teleport(pos=camera, yaw=RED_YAW)})
    time.sleep(0.3)  # white's client gets its new chunks and heading
    empty = centre(scene.frame("white", "colour-empty"))
    seen = {}
    for agent in ("red", "blue"):
        bridge.teleport({agent: Teleport(pos=front, yaw=0.0)})
        scene.wait_seen(agent, "white", front)
        seen[agent] = centre(scene.frame("white", f"colour-{agent}"))
        home, yaw = scene.starts[agent], (RED_YAW if agent == "red" else 0.0)
        bridge.teleport({agent: Teleport(pos=home, yaw=yaw)})
        scene.wait_seen(agent, "white", home)
    gone = centre(scene.frame("white", "colour-gone"))
    bridge.teleport({"white": Teleport(pos=scene.starts["white"], yaw=0.0)})
    counts = {
        name: (reddish(img), bluish(img))
        for name, img in (("empty", empty), *seen.items(), ("gone", gone))
    }
    log.info("centre (reddish, bluish) pixels: %s", counts)
    for name in ("empty", "gone"):
        assert counts[name][0] < 50 and counts[name][1] < 50, (name, counts)
    assert counts["red"][0] > 1000, counts  # Red's shirt and trousers
    assert counts["red"][1] < 50, counts
    assert counts["blue"][1] > 1000, counts
    assert counts["blue"][0] < 50, counts


def test_red_carpet_shows_red(scene: Scene) -> None:
    before = scene.frame(name="no-carpet")
    scene.bridge.set_blocks(
        [BlockPlacement(x=CARPET[0], y=CARPET[1], z=CARPET[2], block="red_carpet")]
    )
    time.sleep(0.2)  # the block change reaches the bot's client
    with_carpet = scene.frame(name="carpet")
    scene.bridge.set_blocks([BlockPlacement(x=CARPET[0], y=CARPET[1], z=CARPET[2], block="air")])
    time.sleep(0.2)
    removed = scene.frame(name="carpet-removed")
    log.info(
        "red pixels: before %d, carpet %d, removed %d",
        red_pixels(before),
        red_pixels(with_carpet),
        red_pixels(removed),
    )
    assert red_pixels(before) < 50
    assert red_pixels(with_carpet) > 1000
    assert red_pixels(removed) < 50


def test_a_hidden_player_is_left_out_of_the_frame(scene: Scene) -> None:
    """A ghost (`render`'s `hidden`) stands 3 blocks in front of a living player: its
    frame shows the empty room; the ghost's own frame, and an unhidden one, show all."""
    bridge = scene.bridge
    empty = scene.frame(name="hidden-empty")
    bridge.teleport({"blue": Teleport(pos=BLUE_FRONT, yaw=0.0)})
    scene.wait_seen("blue", "red", BLUE_FRONT)
    raw = {a: scene.tmp / f"{a}-hidden.rgb" for a in ("red", "blue")}
    result = bridge.render(
        ["red", "blue"],
        {a: {"raw": str(p)} for a, p in raw.items()},
        hidden={"red": ["blue"]},
    )
    assert result["errors"] == {}, result
    hidden = np.frombuffer(raw["red"].read_bytes(), dtype=np.uint8).reshape(H, W, 3)
    ghost_view = np.frombuffer(raw["blue"].read_bytes(), dtype=np.uint8).reshape(H, W, 3)
    shown = scene.frame(name="hidden-shown")  # the next frame that does not hide it
    bridge.teleport({"blue": Teleport(pos=scene.starts["blue"], yaw=0.0)})
    scene.wait_seen("blue", "red", scene.starts["blue"])
    left_out = changed_fraction(centre(empty), centre(hidden))
    drawn = changed_fraction(centre(empty), centre(shown))
    log.info("centre changed: hidden %.4f, shown %.4f", left_out, drawn)
    assert left_out < 0.005
    assert drawn > 0.05
    assert reddish(centre(ghost_view)) > 1000  # the ghost sees Red, facing it
    with pytest.raises(BridgeError) as info:
        bridge.render(["red"], {}, hidden={"red": ["nobody"]})
    assert info.value.type == "bad_request"


def test_a_bot_walks_off_a_carpet_at_its_feet(scene: Scene) -> None:
    """A killed ghost stays where it fell, its body's carpet at its feet: the carpet
    neither traps the bot nor stops the pathfinder from walking it off and back."""
    bridge = scene.bridge
    feet = (2.5, Y, -2.5)
    away = (-2.5, Y, -2.5)
    bridge.teleport({"blue": Teleport(pos=feet, yaw=0.0)})
    carpet = BlockPlacement(x=2, y=65, z=-3, block="blue_carpet")
    bridge.set_blocks([carpet])
    time.sleep(0.3)
    try:
        off = bridge.run_programs({"blue": LowProgram(steps=[GotoStep(pos=away, range=0.5)])}, 8000)
        assert off.outcomes["blue"].status == "ok", off.outcomes["blue"]
        back = bridge.run_programs(
            {"blue": LowProgram(steps=[GotoStep(pos=feet, range=0.5)])}, 8000
        )
        assert back.outcomes["blue"].status == "ok", back.outcomes["blue"]
    finally:
        bridge.set_blocks([carpet.model_copy(update={"block": "air"})])
        bridge.teleport({"blue": Teleport(pos=scene.starts["blue"], yaw=0.0)})


def test_files_have_the_right_sizes_and_agree(scene: Scene) -> None:
    raw, jpg, png = (scene.tmp / f"red-files.{ext}" for ext in ("rgb", "jpg", "png"))
    result = scene.bridge.render(
        ["red"], {"red": {"raw": str(raw), "jpg": str(jpg), "png": str(png)}}, quality=90
    )
    assert result["errors"] == {}
    frame = result["frames"]["red"]
    assert frame["raw"] == str(raw) and frame["jpg"] == str(jpg) and frame["png"] == str(png)
    assert frame["ms"] > 0
    assert raw.stat().st_size == H * W * 3
    pixels = np.frombuffer(raw.read_bytes(), dtype=np.uint8).reshape(H, W, 3)
    with Image.open(jpg) as im:
        assert im.format == "JPEG" and im.mode == "RGB" and im.size == (W, H)
        decoded = np.asarray(im)
    assert decoded.shape == (H, W, 3)
    # Same picture, same orientation (JPEG is lossy: compare on average).
    assert np.abs(decoded.astype(np.int16) - pixels.astype(np.int16)).mean() < 6.0
    with Image.open(png) as im:
        assert im.size == (W, H)
        assert np.array_equal(np.asarray(im.convert("RGB")), pixels)  # lossless


def test_a_round_of_eight_reports_its_time(scene: Scene) -> None:
    files = {
        a: {"raw": str(scene.tmp / f"round-{a}.rgb"), "jpg": str(scene.tmp / f"round-{a}.jpg")}
        for a in IDS
    }
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        result = scene.bridge.render(IDS, files, quality=85)
        times.append((time.monotonic() - t0) * 1000)
        assert result["errors"] == {}
        assert set(result["frames"]) == set(IDS)
        assert result["ms"] > 0
        assert all(f["ms"] > 0 and f["png"] is None for f in result["frames"].values())
    log.info("round of 8 (raw + jpg): %s ms (Node: %s ms)", [round(t) for t in times], result["ms"])
    assert min(times) < 5000
    for a in IDS:
        assert Path(files[a]["raw"]).stat().st_size == H * W * 3


def test_errors_are_per_bot(scene: Scene) -> None:
    result = scene.bridge.render(["red", "nobody"], {"red": {"raw": None}})
    assert set(result["frames"]) == {"red"}
    assert result["frames"]["red"]["raw"] is None
    assert "nobody" in result["errors"]


def test_reconnected_bot_gets_a_new_renderer(scene: Scene) -> None:
    bridge = scene.bridge
    bridge.drop("green")
    deadline = time.monotonic() + 5.0
    while bridge.state().players["green"].connected and time.monotonic() < deadline:
        time.sleep(0.05)
    result = bridge.render(["red", "green"], {})
    assert set(result["frames"]) == {"red"}
    assert "not connected" in result["errors"]["green"]
    bridge.drain_events()
    # Back in the room, looking north over it like red.
    bridge.reconnect("green", (2.5, Y, 3.5), yaw=RED_YAW)
    raw = scene.tmp / "green-back.rgb"
    result = bridge.render(["green"], {"green": {"raw": str(raw)}})
    assert result["errors"] == {}, result
    assert "green" in result["setup_ms"]  # a new renderer was made for the new bot
    img = np.frombuffer(raw.read_bytes(), dtype=np.uint8).reshape(H, W, 3)
    assert img.std() > 20.0
    bridge.teleport({"green": Teleport(pos=scene.starts["green"], yaw=0.0)})


def test_bad_requests_are_rejected(scene: Scene) -> None:
    from controller.bridge import BridgeError

    with pytest.raises(BridgeError) as info:
        scene.bridge.render(["red"], {"red": {"raw": "relative/path.rgb"}})
    assert info.value.type == "bad_request"
    with pytest.raises(BridgeError) as info:
        scene.bridge.render(["red"], {"red": {"raw": None}}, quality=0)
    assert info.value.type == "bad_request"


def _alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_render_without_display_is_a_clear_error(tmp_path: Path) -> None:
    from controller.bridge import BridgeError

    with NodeBridge(log_path=tmp_path / "node.log", env={"DISPLAY": ""}) as bridge:
        with pytest.raises(BridgeError) as info:
            bridge.render(["red"], {})
        assert info.value.type == "render_unavailable"
        assert "DISPLAY" in info.value.message


def test_close_leaves_no_xvfb_or_node(tmp_path: Path) -> None:
    xvfb = Xvfb(tmp_path / "xvfb.log")
    display = xvfb.start()
    bridge = NodeBridge(log_path=tmp_path / "node.log", env=xvfb.env())
    bridge.start()
    assert bridge.render([], {})["frames"] == {}  # loads headless-gl against this display
    node_pid, xvfb_pid = bridge.pid, xvfb.pid
    assert node_pid is not None and xvfb_pid is not None
    assert _alive(node_pid) and _alive(xvfb_pid)
    bridge.close()
    xvfb.close()
    xvfb.close()  # idempotent
    assert not _alive(node_pid)
    assert not _alive(xvfb_pid)
    assert not Path(f"/tmp/.X11-unix/X{display.lstrip(':')}").exists()


def test_xvfb_and_node_die_with_their_python_parent(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from controller.bridge import NodeBridge
        from controller.xvfb import Xvfb
        x = Xvfb(Path({str(tmp_path / "xvfb.log")!r}))
        x.start()
        b = NodeBridge(log_path=Path({str(tmp_path / "node.log")!r}), env=x.env())
        b.start()
        print(x.pid, b.pid, flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
        deadline = time.monotonic() + 10.0
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in pids), f"survivors among {pids}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in pids:
            if _alive(p):
                os.kill(p, signal.SIGKILL)  # leave no orphan behind a failure
