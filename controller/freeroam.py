"""The free-roam step: every agent in play decides at once, then the world plays.

The agents in play are the living and, with `rules.ghost_tasks`, the ghosts: crewmates
killed or ejected who go on doing their tasks. A ghost may only walk, look, wait and
use its stations (any other action is refused before dispatch, as a rules error); the
living never see it (`Session.sight`, their frames: `Session.sync_ghosts`), and a
killed crewmate stays where it fell instead of going to the sealed ghost area.

Rule actions are judged as they happen (`controller.intents.RuleArbiter`): a kill
cancels its victim's program, a called meeting or the end of the game freezes the
batch. Afterwards the step logs the programs' outcomes, the pose samples as a
`trace`, where everyone was when the programs ended (`positions`, `step_end`) and
who could see whom then (`visibility`, `step_end`).
"""

from __future__ import annotations

import logging
import time

from controller.deciding import accept, decide
from controller.engine import Engine
from controller.events import Disconnect, ProgramRun, Reconnect, StepStart, Trace
from controller.intents import RuleArbiter, late_events
from controller.programs import (
    GoTo,
    Look,
    Program,
    ProgramError,
    StrikeGuard,
    UseStation,
    Wait,
    compile_program,
    strike_guards,
    validate_program,
)
from controller.protocol import LowProgram, PlayerPose, PoseSample, StepReport, Teleport
from controller.session import GameInvalid, Session
from controller.worlds.base import WorldFault
from world.geometry import ShipGeometry

log = logging.getLogger(__name__)


def free_roam_step(s: Session) -> None:
    """Play one free-roam step."""
    t0 = time.perf_counter()
    e = s.engine
    e.begin_step()
    s.emit(StepStart(phase="free_roam", **s.base()))
    s.sync_ghosts()  # an ejection since the last step made a ghost
    actors = e.actors
    answers = decide(s, actors)
    t_decided = time.perf_counter()
    ghosts = set(e.ghosts)
    programs: dict[str, LowProgram] = {}
    guards: dict[str, dict[str, StrikeGuard]] = {}
    for agent in actors:
        check = validate_ghost_program if agent in ghosts else validate_program
        program, _ = accept(s, agent, answers[agent], check)
        if program is not None:
            run = e.task_in_progress(agent)
            carried = (run.station, run.start_tick) if run is not None else None
            programs[agent] = compile_program(program, e, s.geometry, carried)
            guards[agent] = strike_guards(program)
    t_world = time.perf_counter()
    arbiter = RuleArbiter(s, guards)
    report = run_batch(s, programs, arbiter)
    world_ms = (time.perf_counter() - t_world) * 1000
    finish_batch(s, report, arbiter)
    s.end_step("free_roam", t0, t_decided, world_ms)


GHOST_ACTIONS = (GoTo, Look, Wait, UseStation)
"""What a ghost may ask for: walking, looking, waiting and its stations."""


def validate_ghost_program(
    program: Program, agent: str, engine: Engine, geometry: ShipGeometry
) -> None:
    """Check a ghost's program before dispatch, as `validate_program` checks a living
    player's: only `GHOST_ACTIONS`, only in free roam, only rooms and stations that exist.

    Raises:
        ProgramError: the first reason the program may not run.
    """
    if agent not in engine.ghosts:
        raise ProgramError(f"{agent} is not a ghost")
    if engine.phase != "free_roam":
        raise ProgramError(f"a ghost acts only in free roam, not during {engine.phase}")
    for i, action in enumerate(program.actions):
        where = f"action {i} ({action.op})"
        if not isinstance(action, GHOST_ACTIONS):
            raise ProgramError(
                f"{where}: {agent} is a ghost and may only walk, look, wait and do its tasks"
            )
        room = action.room if isinstance(action, GoTo) else None
        if room is not None and room not in geometry.rooms:
            raise ProgramError(f"{where}: unknown room {room!r}")
        station = action.station if isinstance(action, GoTo | UseStation) else None
        if station is not None and station not in engine.stations:
            raise ProgramError(f"{where}: unknown station {station}")


def run_batch(
    s: Session, programs: dict[str, LowProgram], arbiter: RuleArbiter | None = None
) -> StepReport:
    """Dispatch one batch (the arbiter judges its rule events), log its programs."""
    if not programs:
        tick, poses = s.world.state()
        return StepReport(tick=tick, outcomes={}, players=poses)
    interval = s.config.sample_interval_ticks
    sink = arbiter.observe if arbiter is not None else None
    report = s.world.run_programs(programs, s.config.step_timeout_ms, arbiter, interval, sink)
    if report.clock_stalls:
        s.flags.add("clock_stall")
    if any(o.reason.startswith("wall guard") for o in report.outcomes.values()):
        # A program was ended by wall time, not by the game clock: its step was
        # shorter in game time than the rules say.
        s.flags.add("wall_guard")
    if arbiter is not None:
        _judge_late(s, report, arbiter)
    s.engine.set_tick(report.tick)
    for agent, outcome in report.outcomes.items():
        s.emit(
            ProgramRun(
                agent=agent,
                status=outcome.status,
                reason=outcome.reason,
                start_tick=outcome.start_tick,
                end_tick=outcome.end_tick,
                steps_done=outcome.steps_done,
                low_steps=len(programs[agent].steps),
                events=[ev.model_dump(exclude_none=True) for ev in outcome.events],
                **s.base(),
            )
        )
    handle_disconnects(s, report)
    return report


def _judge_late(s: Session, report: StepReport, arbiter: RuleArbiter) -> None:
    """Judge, in tick order, rule events the world did not hand to the arbiter.

    A world that does not honour the arbiter cannot cancel a victim's program or
    stop a batch at a meeting, so such a game is flagged `late_rule_events`.
    """
    late = late_events({a: list(o.events) for a, o in report.outcomes.items()}, arbiter.seen)
    if not late:
        return
    s.flags.add("late_rule_events")
    log.warning("%d rule events were not judged during the batch", len(late))
    for tick, _i, agent, ev in late:
        poses = _poses_at(report, tick)
        if ev.kind == "reached" and ev.agent is not None and ev.target_pos is not None:
            old = poses.get(ev.agent)
            poses[ev.agent] = PlayerPose(pos=ev.target_pos, yaw=old.yaw if old else 0.0)
        arbiter(agent, ev, poses)


def _poses_at(report: StepReport, tick: int) -> dict[str, PlayerPose]:
    """Every player's pose at the last sample no later than `tick` (or the end)."""
    best: PoseSample | None = None
    for sample in report.samples:
        if sample.tick <= tick:
            best = sample
    return dict(best.players if best is not None else report.players)


def finish_batch(s: Session, report: StepReport, arbiter: RuleArbiter) -> None:
    """Log the trace, the end-of-step positions and visibility; sync bodies and ghosts."""
    e = s.engine
    write_trace(s, report)
    final = dict(report.players)
    # a task still held must have been held all along: every pose sample since its
    # start, and the end of the batch, must find its player at the station
    for sample in report.samples:
        held = {
            a: pose.pos
            for a, pose in sample.players.items()
            if (run := e.task_in_progress(a)) is not None and run.start_tick <= sample.tick
        }
        if held:
            s.emit(e.check_presence(held, sample.tick))
    acting = set(e.actors)
    s.emit(e.check_presence({a: p.pos for a, p in final.items() if a in acting}, e.tick))
    s.record_positions(final, "step_end")
    # the programs ran in free roam even when a meeting froze them: what everyone saw
    # at that moment is a free-roam sighting (the ghosts' own sight is never logged)
    seen = s.record_visibility("step_end")
    s.observer.perceive(seen.joined(s.ghost_sight()), free_roam=True)
    s.sync_markers()
    # The killed leave play for the sealed ghost area, unless they play on as ghosts:
    # then they stay where they fell and walk on from there. Their body's marker lies
    # at their feet; a carpet, which no bot gets stuck in (both worlds walk over it).
    leaving = [v for v in arbiter.kills if v not in acting]
    if leaving:
        ghosts = {v: Teleport(pos=s.geometry.ghost_pos(s.seat_index[v])) for v in leaving}
        s.world.teleport(ghosts)
    s.sync_ghosts()  # this batch's victims are hidden from the living's next frames


def write_trace(s: Session, report: StepReport) -> None:
    """The batch's pose samples as one compact `trace` event: the players in play (the
    living and the ghosts, where the ghosts really walk) and this batch's victims."""
    if not report.samples:
        return
    e = s.engine
    ticks = [sample.tick for sample in report.samples]
    acting = set(e.actors)
    agents = [
        a
        for a in e.possible_agents
        if all(a in sample.players for sample in report.samples)
        and (a in acting or a in e.bodies and e.bodies[a].step == e.step)
    ]
    players = {
        a: [
            (
                round(sample.players[a].pos[0], 2),
                round(sample.players[a].pos[1], 2),
                round(sample.players[a].pos[2], 2),
                round(sample.players[a].yaw, 1),
            )
            for sample in report.samples
        ]
        for a in agents
    }
    s.emit(Trace(interval=s.config.sample_interval_ticks, ticks=ticks, players=players, **s.base()))


def handle_disconnects(s: Session, report: StepReport) -> None:
    """Log every dropped bot and bring it back, or declare the game invalid."""
    dropped = {ev.agent: ev.reason for ev in s.world.drain_events() if ev.kind == "disconnect"}
    for agent, pose in report.players.items():
        if not pose.connected and agent not in dropped:
            dropped[agent] = "not connected"
    for agent, reason in sorted(dropped.items()):
        s.emit(Disconnect(agent=agent, reason=reason, **s.base()))
        last = s.engine.players[agent].pos
        if agent not in s.engine.actors:
            last = s.geometry.ghost_pos(s.seat_index[agent])
        error = ""
        for _attempt in range(s.config.reconnect_attempts):
            try:
                s.world.reconnect(agent, last)
                s.emit(Reconnect(agent=agent, ok=True, **s.base()))
                break
            except WorldFault as exc:
                error = str(exc)
                s.emit(Reconnect(agent=agent, ok=False, reason=error, **s.base()))
        else:
            raise GameInvalid(
                f"{agent} disconnected ({reason}) and could not reconnect"
                + (f": {error}" if error else "")
            )
