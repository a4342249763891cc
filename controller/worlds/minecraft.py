"""The real world: a Minecraft server (embedded by default) and eight mineflayer bots.

Everything runs in one supervised Node child process (`bots/main.js`) reached
through `controller.bridge.NodeBridge`. Nothing survives the controller: the child
dies with it (see docs/bridge-protocol.md).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path

import numpy as np

from controller.bridge import BridgeError, NodeBridge, free_port
from controller.config import ServerConfig
from controller.observation import FRAME_SHAPE
from controller.protocol import BlockPlacement, LowProgram, PlayerPose, StepReport, Teleport, Vec3
from controller.worlds.base import (
    Arbiter,
    Frame,
    FrameFormat,
    SampleSink,
    Seat,
    WorldEvent,
    WorldFault,
)
from controller.xvfb import Xvfb, XvfbError

log = logging.getLogger(__name__)

HOST = "127.0.0.1"


class MinecraftWorld:
    """World backed by a Minecraft server and mineflayer bots.

    Args:
        server: Embedded (default) or external server settings.
        log_dir: Where the Node process's log goes (`node.log`).
        spawn: World spawn point (the cafeteria).
        frames: Whether first-person frames will be rendered (starts an Xvfb for them).
        jpeg_quality: JPEG quality of saved and model-bound frames.
    """

    def __init__(
        self,
        server: ServerConfig,
        log_dir: Path,
        spawn: Vec3,
        *,
        frames: bool = True,
        jpeg_quality: int = 85,
    ) -> None:
        self.server = server
        self.log_dir = Path(log_dir)
        self.spawn = spawn
        self.frames = frames
        self.jpeg_quality = jpeg_quality
        self.xvfb: Xvfb | None = None
        self.scratch: Path | None = None
        self.bridge: NodeBridge | None = None
        self.address: tuple[str, int] | None = None
        self._versions: dict[str, str] = {}
        self.hidden: frozenset[str] = frozenset()
        """Bots drawn only in each other's frames (`hide_players`)."""

    def _b(self) -> NodeBridge:
        if self.bridge is None:
            raise WorldFault("the world is not started")
        return self.bridge

    def start(
        self,
        blocks: list[BlockPlacement],
        seats: list[Seat],
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, PlayerPose]:
        """Start Node, the server (unless external), build the map and join the bots,
        saying each stage through `progress` with the seconds since the start."""
        t0 = time.monotonic()

        def say(what: str) -> None:
            if progress is not None:
                progress(f"world: {what} ({time.monotonic() - t0:.1f} s)")

        self.log_dir.mkdir(parents=True, exist_ok=True)
        env: dict[str, str] = {}
        if self.frames:
            self.xvfb = Xvfb(self.log_dir / "xvfb.log")
            try:
                self.xvfb.start()
            except XvfbError as exc:
                raise WorldFault(str(exc)) from exc
            env = self.xvfb.env()
            shm = Path("/dev/shm")
            self.scratch = Path(
                tempfile.mkdtemp(prefix="mineamongus-", dir=shm if shm.is_dir() else None)
            )
        self.bridge = NodeBridge(log_path=self.log_dir / "node.log", env=env)
        try:
            say("starting Node")
            self.bridge.start()
            hello = self.bridge.hello()
            self._versions = {"node": str(hello.get("node", ""))}
            for name, version in dict(hello.get("packages", {})).items():
                self._versions[f"npm:{name}"] = str(version)
            external = self.server.external_address()
            bots = [
                {"id": s.agent, "username": s.username, "pos": list(s.pos), "yaw": s.yaw}
                for s in seats
            ]
            if external is None:
                say(f"starting the embedded server (simulation speed {self.server.speed})")
                port = self.bridge.start_server(
                    HOST,
                    free_port(HOST),
                    self.server.version,
                    self.spawn,
                    self.server.view_distance,
                    speed=self.server.speed,
                )
                self.address = (HOST, port)
                say(f"server up on {HOST}:{port}; placing {len(blocks)} blocks")
                self.bridge.set_blocks(blocks)
                say(f"joining {len(bots)} bots")
                poses = self.bridge.connect(HOST, port, self.server.version, bots)
            else:
                self.address = external
                say(f"joining {len(bots)} bots to {external[0]}:{external[1]}")
                poses = self.bridge.connect(
                    external[0],
                    external[1],
                    self.server.version,
                    bots,
                    external=True,
                    admin=self.server.admin,
                )
                self.bridge.set_blocks(blocks)
                poses = self.bridge.teleport(
                    {s.agent: Teleport(pos=s.pos, yaw=s.yaw) for s in seats}
                )
            if self.frames:
                say("starting the renderers")
                result = self.bridge.render_init()
                if result.get("errors"):
                    raise WorldFault(f"renderers could not start: {result['errors']}")
            say("ready")
            return poses
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc

    def run_programs(
        self,
        programs: dict[str, LowProgram],
        timeout_ms: int,
        arbiter: Arbiter | None = None,
        sample_interval: int = 10,
        samples_to: SampleSink | None = None,
    ) -> StepReport:
        """Run a batch of programs on the bots (the game clock runs only meanwhile).

        Rule events reach `arbiter` as Node reports them; see
        `controller.bridge.NodeBridge.run_programs`.
        """
        try:
            report = self._b().run_programs(
                programs,
                timeout_ms,
                arbiter=arbiter,
                sample_interval=sample_interval,
                samples_to=samples_to,
            )
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc
        for agent, outcome in report.outcomes.items():
            if outcome.reason.startswith("wall guard"):
                log.warning("the program of %s hit the wall guard: %s", agent, outcome.reason)
        for stall in report.clock_stalls:
            log.warning(
                "the game clock stopped waiting for %s at tick %d (its physics stalled)",
                stall.agent,
                stall.tick,
            )
        return report

    def teleport(self, moves: dict[str, Teleport]) -> dict[str, PlayerPose]:
        """Server-side teleports."""
        try:
            return self._b().teleport(moves)
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc

    def set_blocks(self, blocks: list[BlockPlacement]) -> None:
        """Place blocks."""
        try:
            self._b().set_blocks(blocks)
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc

    def broadcast(self, text: str) -> None:
        """A server chat message."""
        try:
            self._b().broadcast(text)
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc

    def render(
        self, agents: list[str], save_dir: Path | None, fmt: FrameFormat
    ) -> dict[str, Frame]:
        """First-person frames rendered by Node from each bot's eyes, written to files."""
        if self.scratch is None:
            raise WorldFault("frames are off for this world")
        if save_dir is not None:
            save_dir = save_dir.resolve()  # Node writes the files and needs absolute paths
            save_dir.mkdir(parents=True, exist_ok=True)
        files: dict[str, dict[str, str | None]] = {}
        for agent in agents:
            jpg = (
                (save_dir / f"{agent}.jpg")
                if save_dir is not None and fmt == "jpg"
                else (self.scratch / f"{agent}.jpg")
            )
            png = save_dir / f"{agent}.png" if save_dir is not None and fmt == "png" else None
            files[agent] = {
                "raw": str(self.scratch / f"{agent}.rgb"),
                "jpg": str(jpg),
                "png": str(png) if png else None,
            }
        hidden = {
            agent: sorted(self.hidden - {agent}) for agent in agents if agent not in self.hidden
        }
        try:
            result = self._b().render(agents, files, quality=self.jpeg_quality, hidden=hidden)
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc
        if result.get("errors"):
            raise WorldFault(f"rendering failed: {result['errors']}")
        out: dict[str, Frame] = {}
        for agent in agents:
            paths = files[agent]
            raw = np.fromfile(str(paths["raw"]), dtype=np.uint8)
            if raw.size != FRAME_SHAPE[0] * FRAME_SHAPE[1] * FRAME_SHAPE[2]:
                raise WorldFault(f"frame of {agent} has {raw.size} bytes, not a 640x360 RGB")
            jpeg = Path(str(paths["jpg"])).read_bytes()
            saved = paths["png"] if fmt == "png" else paths["jpg"]
            out[agent] = Frame(
                rgb=raw.reshape(FRAME_SHAPE),
                jpeg=jpeg,
                path=str(saved) if save_dir is not None else None,
            )
        return out

    def hide_players(self, agents: Collection[str]) -> None:
        """From now on the renderer leaves these bots out of every other bot's frame
        but theirs (each `render` request names them per frame)."""
        self.hidden = frozenset(agents)

    def state(self) -> tuple[int, dict[str, PlayerPose]]:
        """Tick and poses."""
        try:
            return self._b().state()
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc

    def advance_clock(self, ticks: int) -> int:
        """Move Node's stopped game clock forward (meeting talk time)."""
        try:
            return self._b().advance_clock(ticks)
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc

    def reconnect(self, agent: str, pos: Vec3) -> None:
        """Reconnect one bot."""
        try:
            self._b().reconnect(agent, pos)
        except BridgeError as exc:
            raise WorldFault(str(exc)) from exc

    def drain_events(self) -> list[WorldEvent]:
        """Disconnections reported by Node."""
        if self.bridge is None:
            return []
        out = []
        for ev in self.bridge.drain_events():
            if ev.get("event") == "disconnect":
                out.append(WorldEvent("disconnect", str(ev.get("agent")), str(ev.get("reason"))))
        return out

    def versions(self) -> dict[str, str]:
        """Node and npm package versions (after start)."""
        return dict(self._versions)

    def close(self) -> None:
        """Stop the bots, the server and the Node process."""
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None
        if self.xvfb is not None:
            self.xvfb.close()
            self.xvfb = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
