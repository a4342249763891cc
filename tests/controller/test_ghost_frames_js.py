"""Ghosts in the real world's frames: the controller names, per frame, the bots a frame
must leave out (`render`'s `hidden`), and the renderer (bots/render.js) does not draw
them. The drawing itself needs headless-gl and a server: tests/integration covers it;
here the request from Python and the renderer's handling of it, without a display."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from controller.bridge import NodeBridge
from controller.config import ServerConfig
from controller.observation import FRAME_SHAPE
from controller.worlds.minecraft import MinecraftWorld

ROOT = Path(__file__).resolve().parents[2]


class Recording(NodeBridge):
    """A bridge that records its requests and answers `render` by writing blank frames."""

    def __init__(self, log_path: Path) -> None:
        super().__init__(log_path)
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def request(
        self, op: str, args: Mapping[str, Any] | None = None, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        self.sent.append((op, dict(args or {})))
        frames = {}
        for agent, files in dict(args or {}).get("files", {}).items():
            Path(files["raw"]).write_bytes(bytes(FRAME_SHAPE[0] * FRAME_SHAPE[1] * 3))
            Path(files["jpg"]).write_bytes(b"jpeg")
            frames[agent] = files
        return {"frames": frames, "errors": {}, "setup_ms": {}, "ms": 0.0}


def test_each_living_frame_hides_the_ghosts_and_a_ghosts_frame_hides_nobody(
    tmp_path: Path,
) -> None:
    world = MinecraftWorld(ServerConfig(), tmp_path, (0.0, 65.0, 0.0))
    bridge = Recording(tmp_path / "node.log")
    world.bridge, world.scratch = bridge, tmp_path
    world.render(["red", "blue"], None, "jpg")
    assert "hidden" not in bridge.sent[-1][1]  # nobody hidden: the request as before
    world.hide_players(["blue", "green"])
    world.render(["red", "blue", "white"], None, "jpg")
    op, args = bridge.sent[-1]
    assert op == "render"
    assert args["hidden"] == {"red": ["blue", "green"], "white": ["blue", "green"]}
    world.hide_players([])
    world.render(["red"], None, "jpg")
    assert "hidden" not in bridge.sent[-1][1]


_SCRIPT = r"""
const { RenderService, checkHidden, shown } = require(process.argv[1])
const fleet = { agents: new Map([
  ['red', { id: 'red', username: 'Red' }],
  ['blue', { id: 'blue', username: 'Blue' }],
  ['green', { id: 'green', username: 'Green' }],
]) }
const out = {}
const names = (m) => Object.fromEntries([...m].map(([k, v]) => [k, [...v].sort()]))
out.checked = names(checkHidden({ red: ['blue', 'green'] }, ['red', 'blue'], fleet))
out.none = names(checkHidden(undefined, ['red'], fleet))
out.refused = []
for (const bad of [{ red: 'blue' }, { red: ['nobody'] }, { green: ['blue'] }, ['red']]) {
  try {
    checkHidden(bad, ['red', 'blue'], fleet)
    out.refused.push(null)
  } catch (err) { out.refused.push(err.type) }
}
out.shown = [
  shown({ username: 'Blue' }, new Set(['Blue'])),
  shown({ username: 'Red' }, new Set(['Blue'])),
  shown({ name: 'arrow' }, new Set(['Blue'])),
]
// the request's lists reach each frame's draw, a frame not named hides nobody
const svc = new RenderService(fleet)
const drawn = {}
const renderer = (id) => {
  const agent = { id, connected: true, bot: {} }
  return {
    agent, bot: agent.bot,
    prepare: async () => {},
    draw: (hidden) => { drawn[id] = [...hidden].sort() },
    convert: () => {},
  }
}
svc._ensure = async (ids) => ({
  ready: new Map(ids.map(id => [id, renderer(id)])), errors: {}, setup: {},
})
svc.render({ agents: ['red', 'blue'], files: {}, hidden: { red: ['blue'] } }).then((res) => {
  out.drawn = drawn
  out.frames = Object.keys(res.frames).sort()
  console.log(JSON.stringify(out))
}, (err) => console.log(JSON.stringify({ error: err.message })))
"""


def test_the_renderer_hides_a_frames_listed_players() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    run = subprocess.run(
        [node, "-e", _SCRIPT, str(ROOT / "bots" / "render.js")],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd=ROOT,
    )
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert "error" not in out, out
    assert out["checked"] == {"red": ["Blue", "Green"]}
    assert out["none"] == {}
    assert out["refused"] == ["bad_request"] * 4
    assert out["shown"] == [False, True, True]
    assert out["drawn"] == {"red": ["Blue"], "blue": []}
    assert out["frames"] == ["blue", "red"]
