"""The step loop: observe, decide in parallel, validate, dispatch, apply rules, log.

Free roam steps every living agent at once (PettingZoo's parallel API); meetings
take one speaker per step, round-robin, then a simultaneous vote. The same loop
drives the real Minecraft world and the in-process fake one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from controller.agents.base import Agent, AgentDecision, InfrastructureFailure
from controller.config import GameConfig
from controller.engine import SKIP, Engine
from controller.events import (
    Decision,
    Disconnect,
    EventBase,
    EventLog,
    GameEnd,
    GameStart,
    Kill,
    PlayerSnapshot,
    Positions,
    ProgramRun,
    Reconnect,
    Role,
    ServerMessage,
    StepStart,
    Visibility,
)
from controller.events import Eject as EjectEvent
from controller.events import MeetingEnd as MeetingEndEvent
from controller.events import Speech as SpeechEvent
from controller.observation import ChatEntry, MeetingView, Observation, Scoreboard, Sighting
from controller.programs import (
    Program,
    ProgramError,
    Say,
    compile_program,
    parse_program,
    validate_program,
)
from controller.protocol import BlockPlacement, LowProgram, PlayerPose, StepReport, Teleport
from controller.versions import python_versions
from controller.worlds.base import Frame, Seat, World, WorldFault
from world.builder import build_blocks, marker_block
from world.geometry import ShipGeometry
from world.spec import MapSpec

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


class GameInvalid(RuntimeError):
    """The game cannot go on for a reason outside the agents' control."""


@dataclass
class GameResult:
    """How a game ended and where its record is."""

    game_id: str
    status: Literal["ok", "invalid"]
    winner: str | None
    ending: str
    reason: str
    steps: int
    out_dir: Path
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(order=True)
class _Intent:
    tick: int
    seat: int
    agent: str = field(compare=False)
    kind: str = field(compare=False)
    data: dict[str, Any] = field(compare=False, default_factory=dict)


@dataclass
class StepTiming:
    """Where one step's wall time went (for benchmarks)."""

    step: int
    phase: str
    total_ms: float
    decide_ms: float
    world_ms: float


class Game:
    """One game from set-up to `summary.json`.

    Args:
        config: The resolved configuration.
        spec: The map.
        world: The world to play in (started by `run`, closed by the caller).
        agents: One agent per seat.
        out_dir: Where `events.jsonl` and `summary.json` go.
        progress: Called with one line of text per step.
    """

    def __init__(
        self,
        config: GameConfig,
        spec: MapSpec,
        world: World,
        agents: Mapping[str, Agent] | Callable[[str, Role], Agent],
        out_dir: Path,
        progress: Progress | None = None,
    ) -> None:
        self.config = config
        self.spec = spec
        self.geometry = ShipGeometry(spec)
        self.world = world
        self.out_dir = Path(out_dir)
        self.progress = progress or (lambda _line: None)
        ids = config.agent_ids()
        self.engine = Engine(
            config.rules,
            ids,
            config.seed,
            stations={s: self.geometry.station_pos(s) for s in self.geometry.station_ids()},
            button=self.geometry.button_pos(),
            room_at=self.geometry.room_at,
        )
        if callable(agents):
            self.agents = {a: agents(a, self.engine.players[a].role) for a in ids}
        else:
            self.agents = dict(agents)
        missing = [a for a in ids if a not in self.agents]
        if missing:
            raise ValueError(f"no agent for seats {missing}")
        self.seat_index = {a: i for i, a in enumerate(ids)}
        self.game_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{config.seed}-{uuid.uuid4().hex[:6]}"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log = EventLog(self.out_dir / "events.jsonl", self.game_id)
        self.chat: list[ChatEntry] = []
        self.chat_cursor: dict[str, int] = dict.fromkeys(ids, 0)
        self.sees: dict[str, list[str]] = {}
        self.sees_bodies: dict[str, list[str]] = {}
        self.known_dead: list[str] = []
        self.last_seen: dict[str, dict[str, Sighting]] = {a: {} for a in ids}
        self.bodies_seen: dict[str, dict[str, Sighting]] = {a: {} for a in ids}
        self.task_started: dict[str, tuple[int, int] | None] = dict.fromkeys(ids)
        self.frames: dict[str, Frame] = {}
        self.markers: list[BlockPlacement] = []
        self.counts: dict[str, int] = {
            "invalid_decisions": 0,
            "program_timeouts": 0,
            "program_failures": 0,
            "disconnects": 0,
            "reconnects": 0,
            "kills": 0,
            "meetings": 0,
            "ejections": 0,
            "rejected_actions": 0,
            "infra_errors": 0,
            "model_calls": 0,
            "failed_calls": 0,
            "tokens_in": 0,
            "tokens_out": 0,
            "tokens_cached": 0,
        }
        self.timings: list[StepTiming] = []
        self.cost_usd = 0.0
        self.cost_unknown = False
        self.resumable = False
        self.versions: dict[str, str] = {}
        self.started = 0.0

    # ------------------------------------------------------------------ helpers
    def _emit(self, events: list[EventBase] | EventBase) -> None:
        for ev in events if isinstance(events, list) else [events]:
            self.log.write(ev)
            kind = getattr(ev, "kind", "")
            if kind == "action_rejected":
                self.counts["rejected_actions"] += 1
            elif kind == "kill":
                self.counts["kills"] += 1
            elif kind == "meeting_start":
                self.counts["meetings"] += 1
            elif kind == "eject":
                self.counts["ejections"] += 1

    def _base(self) -> dict[str, int]:
        return {"step": self.engine.step, "tick": self.engine.tick}

    def _announce(self, text: str) -> None:
        """A server event: logged, broadcast in the world, and put in everyone's chat."""
        self._emit(ServerMessage(text=text, **self._base()))
        self.chat.append(
            ChatEntry(
                index=len(self.chat),
                step=self.engine.step,
                tick=self.engine.tick,
                kind="server",
                text=text,
            )
        )
        self.world.broadcast(f"[Server] {text}")

    def _say(self, speaker: str, text: str) -> None:
        self.chat.append(
            ChatEntry(
                index=len(self.chat),
                step=self.engine.step,
                tick=self.engine.tick,
                kind="speech",
                speaker=speaker,
                text=text,
            )
        )

    def _name(self, agent: str) -> str:
        return agent.capitalize()

    # ------------------------------------------------------------------ run
    def run(self) -> GameResult:
        """Play the game to its end; always write the final events and the summary."""
        self.started = time.monotonic()
        # One event loop for the whole game: model clients keep connections bound to it.
        self.loop = asyncio.new_event_loop()
        end: GameEnd | None = None
        try:
            self._setup()
            while self.engine.check_end() is None:
                self._free_roam_step()
                if self.engine.phase == "meeting" and self.engine.check_end() is None:
                    self._meeting()
            end = self.engine.end_event()
        except GameInvalid as exc:
            log.error("game invalid: %s", exc)
            end = self.engine.end_event("invalid", str(exc))
        except KeyboardInterrupt:
            end = self.engine.end_event("invalid", "interrupted by the user")
            raise
        except WorldFault as exc:
            end = self.engine.end_event("invalid", f"world fault: {exc}")
        except InfrastructureFailure as exc:
            self.resumable = True
            end = self.engine.end_event(
                "invalid", f"infrastructure: {exc.error_class}: {exc} (the game can be rerun)"
            )
        finally:
            if end is None:
                end = self.engine.end_event("invalid", "controller error (see logs)")
            self._emit(end)
            self.log.close()
            self.loop.close()
            result = self._write_summary(end)
        return result

    def _setup(self) -> None:
        self._emit(
            GameStart(
                seed=self.config.seed,
                agents=self.config.agent_ids(),
                roles=self.engine.roles(),
                tasks={a: list(p.tasks) for a, p in self.engine.players.items()},
                map=self.spec.name,
                preset=self.config.preset,
                config=self.config.model_dump(mode="json"),
                agent_specs={a: ag.describe() for a, ag in self.agents.items()},
                **self._base(),
            )
        )
        seats = [
            Seat(
                agent=a,
                username=self._name(a),
                pos=self.geometry.seat_pos(i),
                yaw=round(self.geometry.seat_yaw(i), 1),
            )
            for i, a in enumerate(self.config.agent_ids())
        ]
        self.progress(f"building the map ({self.spec.name}) and bringing in {len(seats)} bots")
        self.world.start(build_blocks(self.spec), seats)
        self.versions = {**python_versions(), **self.world.versions()}
        tick, poses = self.world.state()
        self.engine.set_tick(tick)
        self._record_poses(poses)

    # ------------------------------------------------------------------ observations
    def _observe(self, agent: str) -> Observation:
        e = self.engine
        p = e.players[agent]
        start = self.chat_cursor[agent]
        self.chat_cursor[agent] = len(self.chat)
        meeting: MeetingView | None = None
        if e.meeting is not None:
            m = e.meeting
            body = e.bodies.get(m.victim) if m.victim else None
            current = m.order[m.turn % len(m.order)] if e.phase == "meeting" else None
            meeting = MeetingView(
                index=m.index,
                trigger=m.trigger,
                caller=m.caller,
                victim=m.victim,
                body_room=body.room if body else None,
                body_pos=body.pos if body else None,
                order=list(m.order),
                speaker=current,
                utterances_left=e.rules.max_utterances - m.utterances.get(agent, 0),
                talk_ticks_left=e.talk_ticks_left(),
            )
        phase = e.phase if e.phase in ("free_roam", "meeting", "voting") else "free_roam"
        done = set(p.done)
        scoreboard = Scoreboard(
            phase=e.phase,
            kill_ready=e.kill_ready(agent),
            task_bits=[s in done for s in p.tasks],
            dead=not p.alive,
            meeting_countdown=meeting.talk_ticks_left if meeting else None,
            speaker=meeting.speaker if meeting else None,
            game_over=e.phase == "over",
            area=self.geometry.room_at(p.pos),
            task_in_progress=started[0] if (started := self.task_started[agent]) else None,
            reported_body=meeting.victim if meeting else None,
            emergency_ready=e.emergency_ready(agent),
        )
        frame = self.frames.get(agent)
        return Observation(
            agent=agent,
            role=p.role,
            step=e.step,
            tick=e.tick,
            phase=phase,
            pos=p.pos,
            yaw=p.yaw,
            room=self.geometry.room_at(p.pos),
            tasks=list(p.tasks),
            tasks_done=list(p.done),
            teammates=e.teammates(agent),
            kill_ready=e.kill_ready(agent),
            emergency_ready=e.emergency_ready(agent),
            known_dead=list(self.known_dead),
            players=list(e.possible_agents),
            visible_players={o: e.players[o].pos for o in self.sees.get(agent, [])},
            visible_bodies={
                v: e.bodies[v].pos
                for v in self.sees_bodies.get(agent, [])
                if not e.bodies[v].cleared
            },
            chat=self.chat[start:],
            meeting=meeting,
            scoreboard=scoreboard,
            last_seen=dict(self.last_seen[agent]),
            bodies_seen=dict(self.bodies_seen[agent]),
            rgb=frame.rgb if frame else None,
            jpeg=frame.jpeg if frame else None,
            frame_path=frame.path if frame else None,
        )

    def _decide(self, agents: list[str]) -> dict[str, tuple[AgentDecision | None, float, str]]:
        """Ask every listed agent at once; return (decision, latency ms, error) per agent."""

        async def one(agent: str) -> tuple[str, AgentDecision | None, float, str]:
            obs = self._observe(agent)
            t0 = time.perf_counter()
            try:
                decision = await self.agents[agent].decide(obs)
                return agent, decision, (time.perf_counter() - t0) * 1000, ""
            except InfrastructureFailure:
                raise
            except Exception as exc:  # an agent's own failure is recorded, never a move
                log.exception("agent %s failed", agent)
                return (
                    agent,
                    None,
                    (time.perf_counter() - t0) * 1000,
                    f"{type(exc).__name__}: {exc}",
                )

        async def every() -> list[tuple[str, AgentDecision | None, float, str]]:
            return await asyncio.gather(*(one(a) for a in agents))

        self._render(agents)

        results = self.loop.run_until_complete(every())
        return {a: (d, ms, err) for a, d, ms, err in results}

    def _render(self, agents: list[str]) -> None:
        """First-person frames of the agents about to decide (unless frames are off)."""
        self.frames = {}
        if self.config.frames == "off":
            return
        folder = self.out_dir / "frames" / f"{self.engine.step:04d}"
        self.frames = self.world.render(agents, folder, self.config.frames)

    def _accept(
        self, agent: str, decision: AgentDecision | None, latency_ms: float, error: str
    ) -> Program | None:
        """Parse and validate a decision's program; log the decision either way."""
        error, kind = self._decision_error(decision, error)
        program: Program | None = None
        if decision is not None and not error:
            try:
                program = parse_program(decision.program)
                validate_program(program, agent, self.engine, self.geometry)
                if (
                    self.engine.phase == "meeting"
                    and sum(isinstance(a, Say) for a in program.actions) > 1
                ):
                    raise ProgramError("at most one say per meeting turn")
            except ProgramError as exc:
                error, kind = str(exc), "rules"
                program = None
        self._log_decision(agent, self.engine.phase, decision, latency_ms, error, kind)
        return program

    @staticmethod
    def _decision_error(decision: AgentDecision | None, error: str) -> tuple[str, str]:
        """The decision's error and where it came from (`model` or `infrastructure`)."""
        if error:
            return error, "model"
        if decision is None:
            return "no decision", "model"
        if decision.infrastructure:
            return decision.invalid or decision.infrastructure, "infrastructure"
        if decision.invalid:
            return decision.invalid, "model"
        return "", ""

    def _log_decision(
        self,
        agent: str,
        phase: str,
        decision: AgentDecision | None,
        latency_ms: float,
        error: str,
        kind: str,
    ) -> None:
        """Write the decision event and count errors, calls, tokens and cost."""
        d = decision or AgentDecision()
        if kind == "infrastructure":
            self.counts["infra_errors"] += 1
        elif error:
            self.counts["invalid_decisions"] += 1
        for call in d.calls:
            self.counts["model_calls"] += 1
            self.counts["tokens_in"] += int(call.get("tokens_in", 0))
            self.counts["tokens_out"] += int(call.get("tokens_out", 0))
            self.counts["tokens_cached"] += int(call.get("tokens_cached", 0))
            cost = call.get("cost_usd", 0.0)
            if cost is None:  # an unpriced model: the game's cost is unknown, not lower
                self.cost_unknown = True
            else:
                self.cost_usd += float(cost)
            if call.get("error_class"):
                self.counts["failed_calls"] += 1
        self._emit(
            Decision(
                agent=agent,
                phase=phase,
                module=d.module,
                program=d.program,
                vote=d.vote,
                valid=not error,
                error=error,
                error_kind=kind,
                raw=d.raw,
                reasoning=d.reasoning,
                narration=d.narration,
                latency_ms=round(latency_ms, 3),
                calls=d.calls,
                spec=d.spec,
                **self._base(),
            )
        )

    # ------------------------------------------------------------------ free roam
    def _free_roam_step(self) -> None:
        t0 = time.perf_counter()
        e = self.engine
        e.begin_step()
        self._emit(StepStart(phase="free_roam", **self._base()))
        living = e.agents
        decisions = self._decide(living)
        t_decided = time.perf_counter()
        programs: dict[str, LowProgram] = {}
        for agent in living:
            decision, ms, err = decisions[agent]
            program = self._accept(agent, decision, ms, err)
            if program is not None:
                programs[agent] = compile_program(
                    program, e, self.geometry, self.task_started[agent]
                )
        t_world = time.perf_counter()
        report = self._run(programs)
        world_ms = (time.perf_counter() - t_world) * 1000
        self._apply(report)
        self.timings.append(
            StepTiming(
                step=e.step,
                phase="free_roam",
                total_ms=(time.perf_counter() - t0) * 1000,
                decide_ms=(t_decided - t0) * 1000,
                world_ms=world_ms,
            )
        )
        self._progress_line()

    def _run(self, programs: dict[str, LowProgram]) -> StepReport:
        """Dispatch one batch and deal with disconnections."""
        if not programs:
            tick, poses = self.world.state()
            return StepReport(tick=tick, outcomes={}, players=poses)
        report = self.world.run_programs(programs, self.config.step_timeout_ms)
        self.engine.set_tick(report.tick)
        for agent, outcome in report.outcomes.items():
            self._emit(
                ProgramRun(
                    agent=agent,
                    status=outcome.status,
                    reason=outcome.reason,
                    start_tick=outcome.start_tick,
                    end_tick=outcome.end_tick,
                    steps_done=outcome.steps_done,
                    low_steps=len(programs[agent].steps),
                    events=[ev.model_dump(exclude_none=True) for ev in outcome.events],
                    **self._base(),
                )
            )
            if outcome.status == "timeout":
                self.counts["program_timeouts"] += 1
            elif outcome.status == "failed":
                self.counts["program_failures"] += 1
        self._handle_disconnects(report)
        return report

    def _handle_disconnects(self, report: StepReport) -> None:
        dropped = {
            ev.agent: ev.reason for ev in self.world.drain_events() if ev.kind == "disconnect"
        }
        for agent, pose in report.players.items():
            if not pose.connected and agent not in dropped:
                dropped[agent] = "not connected"
        for agent, reason in sorted(dropped.items()):
            self.counts["disconnects"] += 1
            self._emit(Disconnect(agent=agent, reason=reason, **self._base()))
            last = self.engine.players[agent].pos
            if not self.engine.players[agent].alive:
                last = self.geometry.ghost_pos(self.seat_index[agent])
            error = ""
            for _attempt in range(self.config.reconnect_attempts):
                try:
                    self.world.reconnect(agent, last)
                    self.counts["reconnects"] += 1
                    self._emit(Reconnect(agent=agent, ok=True, **self._base()))
                    break
                except WorldFault as exc:
                    error = str(exc)
                    self._emit(Reconnect(agent=agent, ok=False, reason=error, **self._base()))
            else:
                raise GameInvalid(
                    f"{agent} disconnected ({reason}) and could not reconnect"
                    + (f": {error}" if error else "")
                )

    def _intents(self, report: StepReport) -> list[_Intent]:
        """The rule actions in the step's program events, and tasks left half done."""
        out: list[_Intent] = []
        for agent, outcome in report.outcomes.items():
            seat = self.seat_index[agent]
            carried = self.task_started[agent]
            started: tuple[int, int] | None = None
            for ev in outcome.events:
                if ev.kind == "reached" and ev.agent is not None and ev.target_pos is not None:
                    kill = {"target": ev.agent, "pos": ev.pos, "target_pos": ev.target_pos}
                    out.append(_Intent(ev.tick, seat, agent, "kill", kill))
                elif ev.kind == "mark" and ev.tag:
                    name, _, arg = ev.tag.partition(":")
                    if name == "task_start":
                        started = (int(arg), ev.tick)
                    elif name == "task_resume" and carried and carried[0] == int(arg):
                        started = carried
                    elif name == "task_done" and started and started[0] == int(arg):
                        task = {"station": started[0], "start": started[1], "pos": ev.pos}
                        out.append(_Intent(ev.tick, seat, agent, "task", task))
                        started = None
                    elif name == "button":
                        out.append(_Intent(ev.tick, seat, agent, "emergency", {"pos": ev.pos}))
                    elif name == "report":
                        report_ = {"victim": arg, "pos": ev.pos}
                        out.append(_Intent(ev.tick, seat, agent, "report", report_))
            # A task cut short by the step timeout stays in progress while the player
            # stands at the station; using the station again resumes it.
            pose = report.players.get(agent)
            at_station = (
                started is not None
                and pose is not None
                and math.dist(pose.pos, self.geometry.station_pos(started[0]))
                <= self.engine.rules.station_range
            )
            self.task_started[agent] = started if at_station else None
        return sorted(out)

    def _apply(self, report: StepReport) -> None:
        """Hand the step's rule actions to the engine in tick order, then sync the world."""
        e = self.engine
        for poses_agent, pose in report.players.items():
            if e.players[poses_agent].alive:
                e.set_pose(poses_agent, pose.pos, pose.yaw)
        new_bodies: list[str] = []
        for intent in self._intents(report):
            if e.phase != "free_roam" or e.ending is not None:
                break  # a meeting (or the end) freezes everything after it
            events: list[EventBase]
            if intent.kind == "kill":
                events = e.kill(
                    intent.agent,
                    intent.data["target"],
                    intent.tick,
                    intent.data["pos"],
                    intent.data["target_pos"],
                )
            elif intent.kind == "task":
                events = e.complete_task(
                    intent.agent,
                    intent.data["station"],
                    intent.data["start"],
                    intent.tick,
                    intent.data["pos"],
                )
            elif intent.kind == "report":
                events = e.report(
                    intent.agent, intent.data["victim"], intent.tick, intent.data["pos"]
                )
            else:
                events = e.emergency(intent.agent, intent.tick, intent.data["pos"])
            self._emit(events)
            for ev in events:
                if isinstance(ev, Kill):
                    new_bodies.append(ev.victim)
                    e.check_end()
        e.set_tick(report.tick)
        poses = dict(report.players)
        if new_bodies:
            poses.update(self._place_bodies(new_bodies))
        self._record_poses(poses)

    def _place_bodies(self, victims: list[str]) -> dict[str, PlayerPose]:
        """Put a marker where each body lies and move its owner to the ghost area."""
        e = self.engine
        blocks = []
        moves = {}
        for victim in victims:
            body = e.bodies[victim]
            x, y, z = body.pos
            blocks.append(
                BlockPlacement(
                    x=int(x // 1), y=int(y // 1), z=int(z // 1), block=marker_block(victim)
                )
            )
            moves[victim] = Teleport(pos=self.geometry.ghost_pos(self.seat_index[victim]))
        self.world.set_blocks(blocks)
        self.markers += blocks
        return self.world.teleport(moves)

    def _clear_bodies(self) -> None:
        """Remove the body markers placed since the last meeting."""
        if self.markers:
            self.world.set_blocks([m.model_copy(update={"block": "air"}) for m in self.markers])
            self.markers = []

    def _record_poses(self, poses: dict[str, PlayerPose]) -> None:
        """Log every player's ground truth and what each living player can see."""
        e = self.engine
        players: dict[str, PlayerSnapshot] = {}
        for agent in e.possible_agents:
            p = e.players[agent]
            pose = poses.get(agent)
            if pose is not None and p.alive:
                e.set_pose(agent, pose.pos, pose.yaw)
            pos = pose.pos if pose is not None else p.pos
            yaw = pose.yaw if pose is not None else p.yaw
            players[agent] = PlayerSnapshot(
                pos=pos, yaw=yaw, room=self.geometry.room_at(pos), status=p.status
            )
        self._emit(Positions(players=players, **self._base()))
        radius = e.rules.vision_radius
        living = e.agents
        self.sees = {
            a: [
                b
                for b in living
                if b != a and self.geometry.can_see(e.players[a].pos, e.players[b].pos, radius)
            ]
            for a in living
        }
        self.sees_bodies = {
            a: [
                v
                for v, body in sorted(e.bodies.items())
                if not body.cleared and self.geometry.can_see(e.players[a].pos, body.pos, radius)
            ]
            for a in living
        }
        self._emit(Visibility(sees=self.sees, bodies=self.sees_bodies, **self._base()))
        for a, seen in self.sees.items():
            for b in seen:
                pos = e.players[b].pos
                self.last_seen[a][b] = Sighting(
                    step=e.step, tick=e.tick, pos=pos, room=self.geometry.room_at(pos)
                )
        for a, seen in self.sees_bodies.items():
            for v in seen:
                body = e.bodies[v]
                self.bodies_seen[a][v] = Sighting(
                    step=e.step, tick=e.tick, pos=body.pos, room=body.room
                )

    # ------------------------------------------------------------------ meetings
    def _meeting(self) -> None:
        e = self.engine
        m = e.meeting
        assert m is not None
        living = e.agents
        for a in e.possible_agents:
            if not e.players[a].alive and a not in self.known_dead:
                self.known_dead.append(a)
        moves = {
            a: Teleport(
                pos=self.geometry.seat_pos(self.seat_index[a]),
                yaw=round(self.geometry.seat_yaw(self.seat_index[a]), 1),
            )
            for a in living
        }
        self._clear_bodies()
        poses = self.world.teleport(moves)
        self._record_poses(poses)
        if m.trigger == "report" and m.victim:
            self._announce(
                f"{self._name(m.caller)} reported {self._name(m.victim)}'s body. Meeting called."
            )
        else:
            self._announce(f"{self._name(m.caller)} called an emergency meeting.")
        while True:
            if e.step >= e.rules.max_steps:
                return  # the step budget is spent: the game ends on `timeout`, no vote
            speaker = e.next_speaker()
            if speaker is None:
                break
            self._talk_step(speaker)
        self._vote_step()

    def _talk_step(self, speaker: str) -> None:
        t0 = time.perf_counter()
        e = self.engine
        e.begin_step()
        self._emit(StepStart(phase="meeting", speaker=speaker, **self._base()))
        decision, ms, err = self._decide([speaker])[speaker]
        t_decided = time.perf_counter()
        program = self._accept(speaker, decision, ms, err)
        text = ""
        t_world = time.perf_counter()
        programs = {}
        if program is not None and program.actions:
            programs[speaker] = compile_program(program, e, self.geometry)
        report = self._run(programs)
        world_ms = (time.perf_counter() - t_world) * 1000
        outcome = report.outcomes.get(speaker)
        said = [ev.text for ev in (outcome.events if outcome else []) if ev.kind == "chat"]
        text = said[0] if said and said[0] else ""
        events = e.speak(speaker, text, e.tick)
        self._emit(events)
        if any(isinstance(ev, SpeechEvent) and not ev.passed for ev in events):
            self._say(speaker, text)
        self._record_poses(report.players)
        self.timings.append(
            StepTiming(
                step=e.step,
                phase="meeting",
                total_ms=(time.perf_counter() - t0) * 1000,
                decide_ms=(t_decided - t0) * 1000,
                world_ms=world_ms,
            )
        )
        self._progress_line(f"{self._name(speaker)}: {text or '(passes)'}")

    def _vote_step(self) -> None:
        t0 = time.perf_counter()
        e = self.engine
        if e.meeting is None:
            return
        e.close_talk()
        e.begin_step()
        self._emit(StepStart(phase="voting", **self._base()))
        living = e.agents
        decisions = self._decide(living)
        t_decided = time.perf_counter()
        ballots: dict[str, str] = {}
        for agent in living:
            decision, ms, err = decisions[agent]
            err, kind = self._decision_error(decision, err)
            vote = decision.vote if decision is not None and not err else None
            if not err and (vote is None or (vote != SKIP and vote not in living)):
                err, kind = f"vote {vote!r} is neither a living player nor 'skip'", "rules"
            # The documented fallback for an unusable ballot is a skip vote.
            ballots[agent] = vote if not err and vote is not None else SKIP
            if decision is not None and not decision.module:
                decision = replace(decision, module="VOTE")
            self._log_decision(agent, "voting", decision, ms, err, kind)
        tick, _ = self.world.state()
        events = e.cast_votes(ballots, max(tick, e.tick))
        self._emit(events)
        ejected = next((ev for ev in events if isinstance(ev, EjectEvent)), None)
        end = next(ev for ev in events if isinstance(ev, MeetingEndEvent))
        if ejected is not None:
            role_note = ""
            if e.rules.confirm_ejects:
                role_note = (
                    " was an impostor." if ejected.role == "impostor" else " was not an impostor."
                )
            self._announce(
                f"{self._name(ejected.agent)} was ejected.{role_note}".replace(". was", " was")
            )
            self.known_dead.append(ejected.agent)
            self.world.teleport(
                {
                    ejected.agent: Teleport(
                        pos=self.geometry.ghost_pos(self.seat_index[ejected.agent])
                    )
                }
            )
        elif end.outcome == "tie":
            self._announce("The vote was tied. No one was ejected.")
        else:
            self._announce("No one was ejected.")
        tick, poses = self.world.state()
        e.set_tick(tick)
        self._record_poses(poses)
        e.check_end()
        self.timings.append(
            StepTiming(
                step=e.step,
                phase="voting",
                total_ms=(time.perf_counter() - t0) * 1000,
                decide_ms=(t_decided - t0) * 1000,
                world_ms=0.0,
            )
        )
        self._progress_line(
            f"meeting {end.index}: {end.outcome}"
            + (f" {self._name(end.ejected)}" if end.ejected else "")
        )

    # ------------------------------------------------------------------ reporting
    def _progress_line(self, extra: str = "") -> None:
        e = self.engine
        done, total = e.task_progress()
        line = (
            f"step {e.step:>3}/{e.rules.max_steps} {e.phase:<9} tick {e.tick:>6} "
            f"alive {len(e.agents)}/{len(e.possible_agents)} tasks {done}/{total} "
            f"kills {self.counts['kills']} meetings {self.counts['meetings']}"
        )
        self.progress(line + (f"  {extra}" if extra else ""))

    def _write_summary(self, end: GameEnd) -> GameResult:
        e = self.engine
        done, total = e.task_progress()
        summary: dict[str, Any] = {
            "version": 1,
            "game_id": self.game_id,
            "status": end.status,
            "reason": end.reason,
            "winner": end.winner,
            "ending": end.ending,
            "steps": e.step,
            "ticks": e.tick,
            "seed": self.config.seed,
            "roles": e.roles(),
            "final_status": {a: p.status for a, p in e.players.items()},
            "tasks": {"done": done, "total": total},
            "resumable": self.resumable,
            "counts": self.counts,
            "cost_usd": None if self.cost_unknown else round(self.cost_usd, 6),
            "wall_seconds": round(time.monotonic() - self.started, 3),
            "config": self.config.model_dump(mode="json"),
            "agents": {a: ag.describe() for a, ag in self.agents.items()},
            "versions": self.versions,
        }
        path = self.out_dir / "summary.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
        tmp.replace(path)
        return GameResult(
            game_id=self.game_id,
            status=end.status,
            winner=end.winner,
            ending=end.ending,
            reason=end.reason,
            steps=e.step,
            out_dir=self.out_dir,
            summary=summary,
        )


__all__ = ["Game", "GameInvalid", "GameResult"]
