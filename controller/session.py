"""What the steps of one game share: the engine, the world, the log, perception, memory.

A `Session` is built once by `controller.game.Game` and handed to the step kinds
(`controller.freeroam`, `controller.meeting`). It owns the few things that touch
several of them: writing events, announcing, recording positions and visibility,
and keeping the world's body markers equal to the engine's bodies.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from controller.agents.base import Agent
from controller.config import GameConfig
from controller.engine import Engine
from controller.events import (
    EventBase,
    EventLog,
    PlayerSnapshot,
    Positions,
    ServerMessage,
    SnapshotCause,
    Vec3,
    Visibility,
    VisibilityCause,
)
from controller.observe import Observer
from controller.perception import Perception, Sight
from controller.protocol import BlockPlacement, PlayerPose
from controller.worlds.base import World
from world.builder import marker_block
from world.geometry import ShipGeometry

Progress = Callable[[str], None]


class GameInvalid(RuntimeError):
    """The game cannot go on for a reason outside the agents' control."""


@dataclass
class StepTiming:
    """Where one step's wall time went (for benchmarks)."""

    step: int
    phase: str
    total_ms: float
    decide_ms: float
    world_ms: float


@dataclass
class Session:
    """The shared state of one game's steps."""

    config: GameConfig
    geometry: ShipGeometry
    engine: Engine
    world: World
    log: EventLog
    out_dir: Path
    agents: dict[str, Agent]
    observer: Observer
    perception: Perception
    loop: asyncio.AbstractEventLoop
    progress: Progress
    seat_index: dict[str, int]
    flags: set[str] = field(default_factory=set)
    """Reasons to distrust the game's numbers, added as they are found."""
    timings: list[StepTiming] = field(default_factory=list)
    markers: dict[str, BlockPlacement] = field(default_factory=dict)
    """Victim -> the marker block the world shows for its body."""
    hidden: frozenset[str] = frozenset()
    """The ghosts the world hides from the living's frames (`World.hide_players`)."""
    started: float = field(default_factory=time.monotonic)
    on_step_end: Callable[[], None] = lambda: None
    """Called by every step kind when its step is over (the game's probe hook)."""

    # ------------------------------------------------------------------ steps
    def end_step(self, phase: str, t0: float, t_decided: float, world_ms: float = 0.0) -> None:
        """Close a step: run the step-end hook, then record where its wall time went
        (`t0` and `t_decided` are `time.perf_counter()` readings at its start and once
        every decision was in). The log is forced onto the disk here, so a crash
        loses at most the step in progress."""
        self.log.sync()
        self.on_step_end()
        self.timings.append(
            StepTiming(
                step=self.engine.step,
                phase=phase,
                total_ms=(time.perf_counter() - t0) * 1000,
                decide_ms=(t_decided - t0) * 1000,
                world_ms=world_ms,
            )
        )

    # ------------------------------------------------------------------ log
    def emit(self, events: list[EventBase] | EventBase) -> None:
        """Write events to the log, in order."""
        for ev in events if isinstance(events, list) else [events]:
            self.log.write(ev)

    def base(self) -> dict[str, int]:
        """The current step and tick, for an event."""
        return {"step": self.engine.step, "tick": self.engine.tick}

    @staticmethod
    def name(agent: str) -> str:
        """A seat's in-game name."""
        return agent.capitalize()

    def announce(self, text: str) -> None:
        """A server event: logged, broadcast in the world, and put in everyone's chat."""
        self.emit(ServerMessage(text=text, **self.base()))
        self.observer.add_chat("server", text)
        self.world.broadcast(f"[Server] {text}")

    # ------------------------------------------------------------------ positions
    def record_positions(self, poses: Mapping[str, PlayerPose], cause: SnapshotCause) -> None:
        """Take the poses of the players in play into the engine and log everyone's
        snapshot.

        A player out of play keeps the engine's position (where its body lies, or
        where it was ejected from): the ghost area is no place it could be seen. A
        ghost (`rules.ghost_tasks`) is in play for itself: its real position is taken
        and logged (its status stays `dead` or `ejected`), so the log shows where it
        did its tasks; what the living are told of it is the observer's business.
        """
        e = self.engine
        self.observer.note_departures()
        acting = set(e.actors)
        players: dict[str, PlayerSnapshot] = {}
        for agent in e.possible_agents:
            p = e.players[agent]
            pose = poses.get(agent)
            if pose is not None and agent in acting:
                e.set_pose(agent, pose.pos, pose.yaw)
            players[agent] = PlayerSnapshot(
                pos=p.pos, yaw=p.yaw, room=self.geometry.room_at(p.pos), status=p.status
            )
        self.emit(Positions(players=players, cause=cause, **self.base()))

    def sight(
        self,
        poses: Mapping[str, tuple[Vec3, float]] | None = None,
        bodies: Mapping[str, Vec3] | None = None,
    ) -> Sight:
        """Who each living player perceives, from `poses` (default: the engine's), and
        which of `bodies` (default: the bodies lying now).

        Only the living are viewers and targets: a ghost (`rules.ghost_tasks`) is never
        seen by the living, and what it sees itself is `ghost_sight`, never logged.
        """
        e = self.engine
        living = e.agents
        if poses is None:
            poses = {a: (e.players[a].pos, e.players[a].yaw) for a in living}
        viewers = {a: poses[a] for a in living if a in poses}
        targets = {a: viewers[a][0] for a in viewers}
        lying = e.body_markers() if bodies is None else bodies
        return self.perception.snapshot(viewers, targets, lying)

    def ghost_sight(self) -> Sight:
        """What each ghost perceives now (the living, the other ghosts, the bodies), from
        the engine's poses; empty without ghosts.

        Kept out of the `visibility` events: those record what the living perceive, and
        every reader of the log takes a viewer there for a witness.
        """
        e = self.engine
        ghosts = e.ghosts
        if not ghosts:
            return Sight(sees={}, near={})
        viewers = {a: (e.players[a].pos, e.players[a].yaw) for a in ghosts}
        targets = {a: e.players[a].pos for a in e.actors}
        return self.perception.snapshot(viewers, targets, e.body_markers())

    def record_visibility(
        self,
        cause: VisibilityCause,
        subject: str | None = None,
        tick: int | None = None,
        poses: Mapping[str, tuple[Vec3, float]] | None = None,
        bodies: Mapping[str, Vec3] | None = None,
    ) -> Sight:
        """Log who perceives whom now (or at a rule event's tick, from its poses)."""
        sight = self.sight(poses, bodies)
        base = self.base() if tick is None else {"step": self.engine.step, "tick": tick}
        self.emit(
            Visibility(
                sees=sight.sees,
                bodies=sight.bodies,
                near=sight.near,
                bodies_near=sight.bodies_near,
                cause=cause,
                subject=subject,
                **base,
            )
        )
        return sight

    # ------------------------------------------------------------------ ghosts
    def sync_ghosts(self) -> None:
        """Make the players the world hides from the living's frames exactly the
        engine's ghosts (a call to the world only when they change)."""
        ghosts = frozenset(self.engine.ghosts)
        if ghosts != self.hidden:
            self.world.hide_players(ghosts)
            self.hidden = ghosts

    # ------------------------------------------------------------------ bodies
    def sync_markers(self) -> None:
        """Make the world's body markers exactly the engine's uncleared bodies."""
        want: dict[str, BlockPlacement] = {}
        for victim, (x, y, z) in self.engine.body_markers().items():
            want[victim] = BlockPlacement(
                x=int(x // 1), y=int(y // 1), z=int(z // 1), block=marker_block(victim)
            )
        changes = [
            m.model_copy(update={"block": "air"})
            for v, m in self.markers.items()
            if want.get(v) != m
        ]
        changes += [m for v, m in want.items() if self.markers.get(v) != m]
        if changes:
            self.world.set_blocks(changes)
        self.markers = want
