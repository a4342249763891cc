"""The real world: a Minecraft server (embedded by default) and eight mineflayer bots.

Everything runs in one supervised Node child process (`bots/main.js`) reached
through `controller.bridge.NodeBridge`. Nothing survives the controller: the child
dies with it (see docs/bridge-protocol.md).

A world left open after a game is *warm*: the next `start` resets the embedded server,
its bots and their renderers instead of starting new ones, and checks the result
against what a fresh server would hold; on any difference it plays on a fresh server
instead. `start_record` says which it was (the `world_start` of the game's record).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import numpy as np

from controller.bridge import BotSpec, BridgeError, NodeBridge, free_port
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


class _Refused(Exception):
    """The warm server may not be played on: why, and every trace the check found."""

    def __init__(self, reason: str, traces: list[str]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.traces = traces


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
        self.start_record: dict[str, Any] | None = None
        """How the last `start` got its world: `{"warm": false}` (a fresh server; with
        `refused` and `traces` when a warm one was refused), or `{"warm": true,
        "games_before": N, "reset_ms", "check_ms"}`. The game writes it into its
        record (`game_start.world_start`)."""
        self.games_started = 0
        """Games started on the running Node process (0: none is running)."""
        self._running: tuple[str, tuple[tuple[str, str], ...]] | None = None
        """The settings and seats (agent, username) the running process was started with."""

    def prepare(
        self, server: ServerConfig, spawn: Vec3, *, frames: bool, jpeg_quality: int
    ) -> None:
        """Take the next game's settings; `start` reuses the running server only when
        they are the ones it was started with."""
        self.server = server
        self.spawn = spawn
        self.frames = frames
        self.jpeg_quality = jpeg_quality

    def _settings(self) -> str:
        return f"{self.server.model_dump_json()} spawn={self.spawn} frames={self.frames}"

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
        """Bring the world to a game's start, saying each stage through `progress` with
        the seconds since the start.

        A running embedded server (the world was left open after a game) is reset and
        checked (`NodeBridge.reset`, `NodeBridge.verify_clean`); when it cannot be
        reused or the check finds any trace of the last game, it is closed and a fresh
        one started: Node, the server (unless external), the map, the bots.
        """
        t0 = time.monotonic()

        def say(what: str) -> None:
            if progress is not None:
                progress(f"world: {what} ({time.monotonic() - t0:.1f} s)")

        refused: dict[str, Any] | None = None
        self.start_record = None
        if self.bridge is not None:
            reason = self._not_reusable(seats)
            if reason is None:
                try:
                    return self._warm_start(blocks, seats, say)
                except _Refused as exc:
                    refused = {"refused": exc.reason, "traces": exc.traces}
            else:
                refused = {"refused": reason, "traces": []}
            say(f"the warm server is refused ({refused['refused']}); starting a fresh one")
            log.warning("warm server refused: %s", refused["refused"])
            self.close()
        # said even when the fresh start fails (the game's record is then invalid)
        self.start_record = {"warm": False, **(refused or {})}
        poses = self._cold_start(blocks, seats, say)
        self.games_started = 1
        self._running = (self._settings(), tuple((s.agent, s.username) for s in seats))
        return poses

    def _not_reusable(self, seats: list[Seat]) -> str | None:
        """Why the running server cannot be reset for these seats, or None."""
        bridge = self.bridge
        if bridge is None or bridge.proc is None or bridge.proc.poll() is not None:
            return "the Node process is not running"
        if self.server.external_address() is not None:
            return "an external server is never reused"
        if self._running is None:
            return "the last start did not finish"
        settings, running_seats = self._running
        if settings != self._settings():
            return "the server settings changed"
        if running_seats != tuple((s.agent, s.username) for s in seats):
            return "the seats changed"
        return None

    def _warm_start(
        self, blocks: list[BlockPlacement], seats: list[Seat], say: Callable[[str], None]
    ) -> dict[str, PlayerPose]:
        """Reset the running server for the next game and check it; `_Refused` when the
        check finds a trace (or the reset fails)."""
        bridge = self._b()
        bots = [BotSpec(id=s.agent, username=s.username, pos=s.pos, yaw=s.yaw) for s in seats]
        self.hidden = frozenset()
        bridge.drain_events()  # the last game's news
        say(f"resetting the warm server (game {self.games_started + 1} on it)")
        t0 = time.monotonic()
        try:
            self._reset_world(blocks, bots)
            t1 = time.monotonic()
            say("checking it against a fresh server")
            check = bridge.verify_clean()
            t2 = time.monotonic()
        except BridgeError as exc:
            raise _Refused(f"the reset failed: {exc}", []) from exc
        if not check.clean:
            first = check.traces[0] if check.traces else "a difference"
            more = f" (+{check.found - 1} more)" if check.found > 1 else ""
            raise _Refused(first + more, check.traces)
        try:
            _tick, poses = bridge.state()
        except BridgeError as exc:
            raise _Refused(f"the reset failed: {exc}", []) from exc
        self.start_record = {
            "warm": True,
            "games_before": self.games_started,
            "reset_ms": round((t1 - t0) * 1000),
            "check_ms": round((t2 - t1) * 1000),
        }
        self.games_started += 1
        say("ready (warm)")
        return poses

    def _reset_world(self, blocks: list[BlockPlacement], bots: list[BotSpec]) -> None:
        """The reset itself (a step of its own, so a test can plant a leftover between it
        and the check)."""
        self._b().reset(blocks, bots)

    def _cold_start(
        self, blocks: list[BlockPlacement], seats: list[Seat], say: Callable[[str], None]
    ) -> dict[str, PlayerPose]:
        """Start Node, the server (unless external), build the map and join the bots."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.hidden = frozenset()
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
        self.games_started = 0
        self._running = None
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None
        if self.xvfb is not None:
            self.xvfb.close()
            self.xvfb = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
