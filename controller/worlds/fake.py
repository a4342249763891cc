"""An in-process fake world: the same interface as Minecraft, simulated tick by tick.

Players walk along the map's shortest cell paths at a fixed speed, in lock-step,
one tick at a time, so that a step in the fake world is deterministic given the
programs. The game clock is the count of simulated ticks: it moves only inside
`run_programs` (never in `state`, `teleport`, `set_blocks`, `broadcast` or `render`).
Within a tick players act in seat order; each `mark`/`reached` goes to the arbiter
at once and its directive applies before anyone acts further. Tests inject faults (a
disconnection, a failed reconnect) through `inject_disconnect`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from controller.protocol import (
    ApproachStep,
    BlockPlacement,
    ChatStep,
    FollowStep,
    GotoStep,
    LookStep,
    LowProgram,
    LowStep,
    MarkStep,
    PlayerPose,
    PoseSample,
    ProgramEvent,
    ProgramOutcome,
    ProgramStatus,
    StepReport,
    Teleport,
    TurnStep,
    Vec3,
    WaitStep,
)
from controller.worlds.base import (
    Arbiter,
    Frame,
    FrameFormat,
    SampleSink,
    Seat,
    WorldEvent,
    WorldFault,
)
from controller.worlds.sketch import encode, save, sketch
from world.geometry import ShipGeometry, yaw_towards

TICK_MS = 50


@dataclass
class _Body:
    pos: Vec3
    yaw: float = 0.0
    pitch: float = 0.0
    connected: bool = True

    def pose(self) -> PlayerPose:
        return PlayerPose(
            pos=self.pos, yaw=round(self.yaw, 2), pitch=self.pitch, connected=self.connected
        )


@dataclass
class _Run:
    steps: list[LowStep]
    start_tick: int
    index: int = 0
    events: list[ProgramEvent] = field(default_factory=list)
    waypoints: list[Vec3] | None = None
    counter: int = 0
    anchor: Vec3 | None = None
    """Where the current approach began (for its leash)."""
    status: ProgramStatus | None = None
    reason: str = ""
    end_tick: int = 0


class FakeWorld:
    """A deterministic stand-in for the Minecraft world.

    Args:
        geometry: The map's geometry (paths, walls).
        speed: Walking speed in blocks per tick (Minecraft walks ~0.22, sprints ~0.28).
    """

    def __init__(self, geometry: ShipGeometry, speed: float = 0.25) -> None:
        self.geometry = geometry
        self.speed = speed
        self.tick = 0
        self.players: dict[str, _Body] = {}
        self.blocks: dict[tuple[int, int, int], str] = {}
        self.broadcasts: list[str] = []
        self.chat: list[tuple[str, str]] = []
        self._events: list[WorldEvent] = []
        self._pending_drop: dict[str, str] = {}
        self.refuse_reconnect: set[str] = set()
        self._samples_to: SampleSink | None = None
        self._batch_samples: list[PoseSample] = []
        self._flushed = 0
        self._arbiter: Arbiter | None = None
        self._runs: dict[str, _Run] = {}
        self._frozen = False
        self.hidden: frozenset[str] = frozenset()
        """Players drawn only in each other's pictures (`hide_players`)."""

    # ------------------------------------------------------------------ world API
    def start(
        self,
        blocks: list[BlockPlacement],
        seats: list[Seat],
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, PlayerPose]:
        """Record the map and place every seat."""
        self.set_blocks(blocks)
        for seat in seats:
            self.players[seat.agent] = _Body(pos=seat.pos, yaw=seat.yaw)
        return self._poses()

    def run_programs(
        self,
        programs: dict[str, LowProgram],
        timeout_ms: int,
        arbiter: Arbiter | None = None,
        sample_interval: int = 10,
        samples_to: SampleSink | None = None,
    ) -> StepReport:
        """Run programs in lock-step until all finish, the timeout passes or the batch freezes.

        Instant steps (look, turn, chat, mark) cost no tick; movement happens between
        ticks, so a batch whose programs are all instant leaves the clock where it was.
        Each `mark` and `reached` event goes to `arbiter` at once, with every connected
        player's pose at that moment (a pose sample is taken there too, and `samples_to`
        gets the samples since the previous rule event first); its directive ends
        programs before the next step.
        """
        if sample_interval < 1:
            raise ValueError(f"sample_interval must be at least 1 tick, got {sample_interval}")
        start = self.tick
        self._arbiter = arbiter
        self._samples_to = samples_to
        self._frozen = False
        self._runs = runs = {}
        for agent in sorted(programs):
            run = _Run(steps=list(programs[agent].steps), start_tick=start)
            body = self.players.get(agent)
            if body is None or not body.connected:
                run.status, run.reason, run.end_tick = "failed", "disconnected", start
            elif agent in self._pending_drop:
                body.connected = False
                reason = self._pending_drop.pop(agent)
                self._events.append(WorldEvent("disconnect", agent, reason))
                run.status, run.reason, run.end_tick = "failed", "disconnected", start
            runs[agent] = run
        samples = self._batch_samples = [self._sample()]
        self._flushed = 0
        self._step_all(moving=False)
        samples[-1] = self._sample()  # after the instant steps of the start tick
        limit = max(1, timeout_ms // TICK_MS)
        while (
            not self._frozen
            and any(r.status is None for r in runs.values())
            and self.tick - start < limit
        ):
            self.tick += 1
            self._step_all(moving=True)
            if samples[-1].tick == self.tick:
                # a rule event sampled this tick part-way through it: complete the sample
                samples[-1] = self._sample()
            elif self.tick - samples[-1].tick >= sample_interval:
                samples.append(self._sample())
        for run in runs.values():
            if run.status is None:
                run.status, run.reason, run.end_tick = "timeout", "step timeout", self.tick
        if samples[-1].tick != self.tick or samples[-1].players != self._connected_poses():
            if samples[-1].tick == self.tick:
                samples.pop()
            samples.append(self._sample())
        self._arbiter, self._runs, self._samples_to = None, {}, None
        outcomes = {
            agent: ProgramOutcome(
                status=run.status or "ok",
                reason=run.reason,
                start_tick=run.start_tick,
                end_tick=run.end_tick,
                steps_done=run.index,
                events=run.events,
            )
            for agent, run in runs.items()
        }
        return StepReport(tick=self.tick, outcomes=outcomes, players=self._poses(), samples=samples)

    def _step_all(self, *, moving: bool) -> None:
        """Give every running program its share of the current tick, in seat order."""
        for agent, run in self._runs.items():
            if self._frozen:
                return
            if run.status is None:
                self._advance(agent, run, moving=moving)

    def _emit(self, agent: str, run: _Run, event: ProgramEvent) -> None:
        """Record a program event and, for rule events, apply the arbiter's directive now."""
        run.events.append(event)
        if self._arbiter is None or event.kind == "chat":
            return
        poses = self._connected_poses()
        samples = self._batch_samples
        if samples[-1].tick == self.tick:
            samples[-1] = self._sample()
        else:
            samples.append(self._sample())
        if self._samples_to is not None:
            self._samples_to(samples[self._flushed :])
            self._flushed = len(samples)
        directive = self._arbiter(agent, event, poses)
        if directive is None:
            return
        reason = directive.reason or ("meeting" if directive.freeze else "cancelled")
        targets = list(self._runs) if directive.freeze else directive.cancel
        for target in targets:
            victim = self._runs.get(target)
            if victim is not None and victim.status is None:
                self._finish(victim, "cancelled", reason)
        if directive.freeze:
            self._frozen = True

    def _sample(self) -> PoseSample:
        return PoseSample(tick=self.tick, players=self._connected_poses())

    def _connected_poses(self) -> dict[str, PlayerPose]:
        return {a: b.pose() for a, b in sorted(self.players.items()) if b.connected}

    def teleport(self, moves: dict[str, Teleport]) -> dict[str, PlayerPose]:
        """Move players at once."""
        for agent, move in moves.items():
            body = self.players[agent]
            body.pos, body.yaw = move.pos, move.yaw
        return self._poses()

    def set_blocks(self, blocks: list[BlockPlacement]) -> None:
        """Record block changes."""
        for b in blocks:
            self.blocks[(b.x, b.y, b.z)] = b.block

    def broadcast(self, text: str) -> None:
        """Record a server message."""
        self.broadcasts.append(text)

    def render(
        self, agents: list[str], save_dir: Path | None, fmt: FrameFormat
    ) -> dict[str, Frame]:
        """Synthetic first-person pictures (see `controller.worlds.sketch`); a hidden
        player is drawn only in a hidden player's picture."""
        out: dict[str, Frame] = {}
        markers = {b: pos for pos, b in self._markers().items()}
        for agent in agents:
            body = self.players[agent]
            unseen = frozenset() if agent in self.hidden else self.hidden
            others = {a: b.pos for a, b in self.players.items() if a != agent and a not in unseen}
            rgb = sketch(self.geometry, body.pos, body.yaw, others, markers)
            jpeg = encode(rgb, "jpg")
            path = None
            if save_dir is not None:
                data = jpeg if fmt == "jpg" else encode(rgb, "png")
                path = save(data, save_dir / f"{agent}.{fmt}")
            out[agent] = Frame(rgb=rgb, jpeg=jpeg, path=path)
        return out

    def hide_players(self, agents: Collection[str]) -> None:
        """Draw these players only in each other's pictures from now on."""
        self.hidden = frozenset(agents)

    def _markers(self) -> dict[Vec3, str]:
        """Body markers (carpets) by position, named by colour."""
        out: dict[Vec3, str] = {}
        for (x, y, z), block in self.blocks.items():
            if block.endswith("_carpet"):
                out[(x + 0.5, float(y), z + 0.5)] = block.removesuffix("_carpet")
        return out

    def state(self) -> tuple[int, dict[str, PlayerPose]]:
        """Current tick and poses."""
        return self.tick, self._poses()

    def advance_clock(self, ticks: int) -> int:
        """Move the clock forward (nobody moves: no program runs between batches)."""
        if ticks < 0:
            raise ValueError(f"ticks must be non-negative, got {ticks}")
        self.tick += ticks
        return self.tick

    def reconnect(self, agent: str, pos: Vec3) -> None:
        """Bring a dropped player back, unless a test forbids it."""
        if agent in self.refuse_reconnect:
            raise WorldFault(f"{agent} could not reconnect")
        body = self.players[agent]
        body.connected, body.pos = True, pos

    def drain_events(self) -> list[WorldEvent]:
        """Events since the last call."""
        out, self._events = self._events, []
        return out

    def versions(self) -> dict[str, str]:
        """No external software."""
        return {"world": "fake"}

    def close(self) -> None:
        """Nothing to stop."""

    # ------------------------------------------------------------------ fault injection
    def inject_disconnect(self, agent: str, reason: str = "injected") -> None:
        """Drop this player's connection when its next program starts."""
        self._pending_drop[agent] = reason

    # ------------------------------------------------------------------ simulation
    def _poses(self) -> dict[str, PlayerPose]:
        return {a: b.pose() for a, b in sorted(self.players.items())}

    def _finish(self, run: _Run, status: ProgramStatus, reason: str = "") -> None:
        run.status, run.reason, run.end_tick = status, reason, self.tick

    def _advance(self, agent: str, run: _Run, *, moving: bool) -> None:
        """Spend the current tick on this program.

        Instant steps run at once; then at most one tick of walking or waiting, and
        none at the batch's first tick (`moving` False), so time and movement agree:
        a walk of n ticks ends n ticks after it began.
        """
        body = self.players[agent]
        spent = not moving
        while run.index < len(run.steps):
            if run.status is not None:
                return
            step = run.steps[run.index]
            if isinstance(step, LookStep):
                body.yaw, body.pitch = step.yaw % 360.0, step.pitch
            elif isinstance(step, TurnStep):
                body.yaw = (body.yaw + step.yaw) % 360.0
            elif isinstance(step, ChatStep):
                self.chat.append((agent, step.text))
                self._emit(
                    agent,
                    run,
                    ProgramEvent(kind="chat", tick=self.tick, pos=body.pos, text=step.text),
                )
            elif isinstance(step, MarkStep):
                self._emit(
                    agent,
                    run,
                    ProgramEvent(kind="mark", tick=self.tick, pos=body.pos, tag=step.tag),
                )
            elif isinstance(step, WaitStep):
                if run.counter < step.ticks:
                    if spent:
                        return
                    run.counter += 1
                    spent = True
                    if run.counter < step.ticks:
                        return
                run.counter = 0
            elif isinstance(step, GotoStep):
                if math.dist(body.pos, step.pos) > step.range:
                    if run.waypoints is None:
                        run.waypoints = self._route(body.pos, step.pos)
                        if run.waypoints is None:
                            self._finish(run, "failed", "no path")
                            return
                    if spent:
                        return
                    self._walk(body, run.waypoints)
                    spent = True
                    if math.dist(body.pos, step.pos) > step.range and run.waypoints:
                        return
                    if math.dist(body.pos, step.pos) > step.range:
                        self._finish(run, "failed", "stuck short of the goal")
                        return
                run.waypoints = None
            elif isinstance(step, FollowStep | ApproachStep):
                target = self.players.get(step.agent)
                if target is None or not target.connected:
                    self._finish(run, "failed", f"player {step.agent} not found")
                    return
                near = step.distance if isinstance(step, FollowStep) else step.range
                if isinstance(step, ApproachStep) and step.leash is not None:
                    run.anchor = run.anchor or body.pos
                    away = math.dist(run.anchor, target.pos)
                    if away > step.leash:
                        self._finish(
                            run,
                            "failed",
                            f"approach: {step.agent} is {away:.1f} blocks from where the "
                            f"approach began, beyond its leash of {step.leash:g}",
                        )
                        return
                far = math.dist(body.pos, target.pos) > near
                if isinstance(step, FollowStep) or far:
                    if spent:
                        return
                    if far:
                        route = self._route(body.pos, target.pos)
                        if route is None:
                            self._finish(run, "failed", "no path")
                            return
                        self._walk(body, route)
                    spent = True
                if isinstance(step, ApproachStep):
                    if math.dist(body.pos, target.pos) > step.range:
                        return
                    self._emit(
                        agent,
                        run,
                        ProgramEvent(
                            kind="reached",
                            tick=self.tick,
                            pos=body.pos,
                            agent=step.agent,
                            target_pos=target.pos,
                        ),
                    )
                    run.anchor = None
                else:
                    run.counter += 1
                    if run.counter < step.ticks:
                        return
                    run.counter = 0
            run.index += 1
        if run.status is None:
            self._finish(run, "ok")

    def _route(self, a: Vec3, b: Vec3) -> list[Vec3] | None:
        cells = self.geometry.path(a, b)
        if cells is None:
            return None
        points = [self.geometry.stand_pos(c) for c in cells[1:]]
        points.append((b[0], a[1], b[2]))
        return points

    def _walk(self, body: _Body, waypoints: list[Vec3]) -> None:
        budget = self.speed
        x, y, z = body.pos
        while budget > 1e-9 and waypoints:
            tx, _, tz = waypoints[0]
            dx, dz = tx - x, tz - z
            d = math.hypot(dx, dz)
            if d <= budget:
                x, z = tx, tz
                budget -= d
                waypoints.pop(0)
            else:
                x, z = x + dx / d * budget, z + dz / d * budget
                budget = 0.0
            if d > 1e-9:
                body.yaw = yaw_towards((0.0, 0.0, 0.0), (dx, 0.0, dz))
        body.pos = (round(x, 4), y, round(z, 4))
