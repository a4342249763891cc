"""Conformance and determinism checks, shipped as functions.

`log_violations` audits a finished game's event log against the rules using the
log alone; `determinism_check` plays the same seed twice and compares the engine
events. Both run against the fake world in unit tests and against the real
server in integration tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from controller.config import GameConfig, RulesConfig
from controller.events import (
    Decision,
    Eject,
    Emergency,
    Event,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    ProgramRun,
    Report,
    Speech,
    StepStart,
    TaskDone,
    Vote,
    read_events,
)

ACTING = (Decision, ProgramRun, TaskDone, Report, Emergency, Speech, Vote)
RULE_KINDS = {
    "kill",
    "task_done",
    "report",
    "emergency",
    "meeting_start",
    "speech",
    "vote",
    "meeting_end",
    "eject",
    "action_rejected",
    "game_end",
}


def _actor(ev: Event) -> str | None:
    if isinstance(ev, Decision | ProgramRun | TaskDone):
        return ev.agent
    if isinstance(ev, Report):
        return ev.reporter
    if isinstance(ev, Emergency):
        return ev.caller
    if isinstance(ev, Speech):
        return ev.speaker
    if isinstance(ev, Vote):
        return ev.voter
    return None


def log_violations(events: list[Event] | str | Path) -> list[str]:
    """Every breach of the rules the log shows; an empty list means none.

    Checks: kills only by living impostors on living crewmates, in range, never
    during a cooldown (recomputed from the config in `game_start`); reports in
    range; nobody dead or ejected acts; at most `max_utterances` speeches per player
    per meeting, only by the living and in turn; one ballot per living voter; the
    ending agrees with the final state.
    """
    evs = read_events(events) if isinstance(events, str | Path) else events
    out: list[str] = []
    start = next((e for e in evs if isinstance(e, GameStart)), None)
    if start is None:
        return ["no game_start event"]
    rules = RulesConfig.model_validate(start.config["rules"])
    roles = start.roles
    status = dict.fromkeys(start.agents, "alive")
    ready = {a: rules.initial_kill_cooldown_ticks for a in start.agents if roles[a] == "impostor"}
    done: dict[str, set[int]] = {a: set() for a in start.agents}
    meeting: MeetingStart | None = None
    spoken: dict[str, int] = {}
    voted: set[str] = set()
    last_step = 0
    end: GameEnd | None = None
    for ev in evs:
        last_step = max(last_step, ev.step)
        actor = _actor(ev)
        if actor is not None and status.get(actor) != "alive":
            out.append(f"step {ev.step}: {actor} is {status.get(actor)} but acts ({ev.kind})")
        if isinstance(ev, Kill):
            if roles.get(ev.killer) != "impostor":
                out.append(f"step {ev.step}: {ev.killer} kills but is not an impostor")
            if roles.get(ev.victim) != "crewmate" or status.get(ev.victim) != "alive":
                out.append(f"step {ev.step}: {ev.victim} killed but was not a living crewmate")
            if ev.distance > rules.kill_range + 1e-6:
                out.append(f"step {ev.step}: kill at {ev.distance} > range {rules.kill_range}")
            if ev.tick < ready.get(ev.killer, 0):
                out.append(
                    f"step {ev.step}: {ev.killer} killed at tick {ev.tick} during "
                    f"cooldown (ready at {ready[ev.killer]})"
                )
            if meeting is not None:
                out.append(f"step {ev.step}: kill during a meeting")
            ready[ev.killer] = ev.tick + rules.kill_cooldown_ticks
            status[ev.victim] = "dead"
        elif isinstance(ev, Report):
            if ev.distance > rules.report_range + 1e-6:
                out.append(f"step {ev.step}: report from {ev.distance} > {rules.report_range}")
        elif isinstance(ev, TaskDone) and not ev.fake:
            done[ev.agent].add(ev.station)
        elif isinstance(ev, MeetingStart):
            meeting, spoken, voted = ev, {}, set()
            if sorted(ev.order) != sorted(a for a, s in status.items() if s == "alive"):
                out.append(f"step {ev.step}: meeting order {ev.order} is not the living players")
        elif isinstance(ev, Speech):
            if meeting is None or ev.speaker not in meeting.order:
                out.append(f"step {ev.step}: {ev.speaker} speaks outside a meeting")
            elif not ev.passed:
                spoken[ev.speaker] = spoken.get(ev.speaker, 0) + 1
                if spoken[ev.speaker] > rules.max_utterances:
                    out.append(
                        f"step {ev.step}: {ev.speaker} spoke {spoken[ev.speaker]} times "
                        f"in meeting {meeting.index}"
                    )
        elif isinstance(ev, StepStart) and ev.phase == "meeting" and meeting is None:
            out.append(f"step {ev.step}: a meeting step outside a meeting")
        elif isinstance(ev, Vote):
            if ev.voter in voted:
                out.append(f"step {ev.step}: {ev.voter} voted twice")
            voted.add(ev.voter)
            if ev.target is not None and ev.target != "skip" and status.get(ev.target) != "alive":
                out.append(f"step {ev.step}: vote for {ev.target}, who is not alive")
        elif isinstance(ev, MeetingEnd):
            if sum(ev.tally.values()) != len(voted):
                out.append(f"step {ev.step}: tally {ev.tally} does not match {len(voted)} votes")
            meeting = None
            for imp in ready:
                ready[imp] = max(ready[imp], ev.tick + rules.kill_cooldown_ticks)
        elif isinstance(ev, Eject):
            status[ev.agent] = "ejected"
        elif isinstance(ev, GameEnd):
            end = ev
    if end is None:
        return [*out, "no game_end event"]
    if end.status == "ok":
        out += _ending_violations(end, rules, roles, status, done, start.tasks, last_step)
    return out


def _ending_violations(
    end: GameEnd,
    rules: RulesConfig,
    roles: Mapping[str, str],
    status: dict[str, str],
    done: dict[str, set[int]],
    tasks: dict[str, list[int]],
    steps: int,
) -> list[str]:
    living = [a for a, s in status.items() if s == "alive"]
    imps = sum(1 for a in living if roles[a] == "impostor")
    crew = [a for a in living if roles[a] == "crewmate"]
    expected: tuple[str, str] | None = None
    if imps == 0:
        expected = ("crew", "impostors_ejected")
    elif len(crew) <= imps:
        expected = ("impostors", "impostors_outnumber")
    elif all(done[a] >= set(tasks[a]) for a in crew):
        expected = ("crew", "tasks_done")
    elif steps >= rules.max_steps:
        expected = (rules.timeout_winner, "timeout")
    if expected != (end.winner, end.ending):
        return [f"ending {end.winner}/{end.ending} does not match the final state {expected}"]
    return []


def rule_events(events: list[Event]) -> list[dict[str, Any]]:
    """The engine's rule events without wall-clock and game-id fields, for comparison."""
    return [ev.model_dump(exclude={"wall", "game_id"}) for ev in events if ev.kind in RULE_KINDS]


def determinism_check(
    play: Callable[[GameConfig, Path], Path], config: GameConfig, tmp: Path
) -> list[str]:
    """Play the same config twice; return the differences in engine events (none = pass).

    Args:
        play: Plays one game with a config into a folder and returns the log's path.
        config: The configuration (its seed fixes everything).
        tmp: A scratch folder.
    """
    a = rule_events(read_events(play(config, tmp / "a")))
    b = rule_events(read_events(play(config, tmp / "b")))
    diffs = [f"event {i}: {x} != {y}" for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
    if len(a) != len(b):
        diffs.append(f"{len(a)} events vs {len(b)}")
    return diffs


def view_leaks(
    observations: Mapping[str, list[Any]],
    events: list[Event],
    geometry: Any,
    *,
    ego_range: float = 12.0,
    privileged_radius: float = 96.0,
) -> tuple[list[str], int]:
    """Check the ego and privileged views built from the given observations against the log.

    Each agent's observations are fed, in order, through the same filter its agent uses
    (`controller.views.Knowledge`), once per state mode, and every fact of every view is
    checked against the log alone:

    * **ego**: every player or body the view places in view now, and every remembered
      sighting, was inside the agent's camera cone at that moment (the poses of the
      `positions`/`trace` events at that tick, `controller.perception.in_cone`), within
      `ego_range` and in line of sight; no roster, no map, no task list.
    * **privileged**: every last-known position matches the log at its tick and was
      perceived (a `visibility` entry of the agent at that step, field of view or all
      around) or was within `privileged_radius` of the agent (the roster); each body
      was perceived.
    * **both**: no view names the role of anyone but an impostor's own teammates.
    * **what was sent**: every `decision` of an ego agent whose `view_text` is logged
      names in view only players (and bodies) inside its camera cone at that tick.

    Args:
        observations: Agent -> the `Observation`s it was given, in order.
        events: The game's event log.
        geometry: The map's `ShipGeometry`.
        ego_range: The ego range the agents used (`AriaSpec.ego_range`).
        privileged_radius: The privileged radius the agents used.

    Returns:
        The leaks found (empty: none) and how many facts were checked.
    """
    import math

    from controller.events import Positions, Trace, Visibility
    from controller.perception import in_cone
    from controller.views import Knowledge

    start = next(e for e in events if isinstance(e, GameStart))
    roles = start.roles
    # Keyed by tick: an observation carries the tick of the snapshot it was built from
    # (its `step` is the step about to be decided).
    seen_by: dict[tuple[int, str], set[str]] = {}
    bodies_by: dict[tuple[int, str], set[str]] = {}
    for ev in events:
        if isinstance(ev, Visibility):
            for who, names in {**ev.near, **ev.sees}.items():
                seen_by.setdefault((ev.tick, who), set()).update(
                    names, ev.sees.get(who, []), ev.near.get(who, [])
                )
            for who in {**ev.bodies, **ev.bodies_near}:
                bodies_by.setdefault((ev.tick, who), set()).update(
                    ev.bodies.get(who, []), ev.bodies_near.get(who, [])
                )
    vis_ticks = sorted({tick for tick, _ in seen_by} | {tick for tick, _ in bodies_by})

    def perceived(table: dict[tuple[int, str], set[str]], tick: int, agent: str) -> set[str]:
        """What the log says `agent` perceived at the last visibility moment <= `tick`."""
        before = [t for t in vis_ticks if t <= tick]
        return table.get((before[-1], agent), set()) if before else set()

    kills = {ev.victim: ev.pos for ev in events if isinstance(ev, Kill)}
    snapshots = [ev for ev in events if isinstance(ev, Positions)]
    traces = [ev for ev in events if isinstance(ev, Trace)]

    def poses(tick: int) -> dict[str, tuple[tuple[float, float, float], float]]:
        """Everyone's (position, yaw) at a tick, as the log records it (the last snapshot
        of that tick, else a trace sample, else the last snapshot before it)."""
        exact = [p for p in snapshots if p.tick == tick]
        if exact:
            return {a: (s.pos, s.yaw) for a, s in exact[-1].players.items()}
        for t in traces:
            if tick in t.ticks:
                i = t.ticks.index(tick)
                return {
                    a: ((xs[i][0], xs[i][1], xs[i][2]), xs[i][3])
                    for a, xs in t.players.items()
                    if i < len(xs)
                }
        before = [p for p in snapshots if p.tick <= tick]
        return {a: (s.pos, s.yaw) for a, s in before[-1].players.items()} if before else {}

    def in_camera(agent: str, at: dict[str, Any], target: tuple[float, float, float]) -> bool:
        if agent not in at:
            return False
        eye, yaw = at[agent]
        return in_cone(eye, yaw, target) and geometry.can_see(eye, target, ego_range + 1e-6)

    leaks: list[str] = []
    checked = 0
    for agent, seen in observations.items():
        mates = sorted(a for a, r in roles.items() if r == "impostor" and a != agent)
        expected = mates if roles[agent] == "impostor" else []
        for mode in ("ego", "privileged"):
            knowledge = Knowledge(
                mode, geometry, ego_range=ego_range, privileged_radius=privileged_radius
            )
            for raw in seen:
                view = knowledge.view(knowledge.update(raw))
                where = f"{agent} ({mode}) step {raw.step}"
                if sorted(view.teammates) != expected:
                    leaks.append(f"{where}: teammates {view.teammates}")
                if mode == "ego":
                    now = poses(raw.tick)
                    if view.rooms is not None or view.last_seen is not None or view.tasks:
                        leaks.append(f"{where}: the ego view holds privileged fields")
                    for other in view.in_view:
                        checked += 1
                        truth = now.get(other)
                        if truth is None or not in_camera(agent, now, truth[0]):
                            leaks.append(f"{where}: names {other} outside the field of view")
                    for victim, v in view.bodies_in_view.items():
                        checked += 1
                        body = kills.get(victim, v.pos)
                        if not in_camera(agent, now, body):
                            leaks.append(f"{where}: names {victim}'s body outside the view")
                    for other, s in view.seen_before.items():
                        checked += 1
                        then = poses(s.tick)
                        truth = then.get(other)
                        if truth is None or not in_camera(agent, then, truth[0]):
                            leaks.append(
                                f"{where}: remembers {other} at step {s.step} outside the "
                                "field of view"
                            )
                        elif math.dist(truth[0], s.pos) > 1e-6:
                            leaks.append(f"{where}: wrong position of {other}")
                else:
                    for other, s in (view.last_seen or {}).items():
                        checked += 1
                        then = poses(s.tick)
                        truth = then.get(other)
                        mine = then.get(agent)
                        if s.tick > raw.tick or truth is None:
                            leaks.append(f"{where}: no record of {other} at step {s.step}")
                        elif math.dist(truth[0], s.pos) > 1e-6:
                            leaks.append(f"{where}: wrong position of {other}")
                        elif other not in perceived(seen_by, s.tick, agent) and (
                            mine is None or math.dist(mine[0], s.pos) > privileged_radius
                        ):
                            leaks.append(f"{where}: never saw {other} at step {s.step}")
                    for victim, s in (view.bodies_seen or {}).items():
                        checked += 1
                        if victim not in perceived(bodies_by, s.tick, agent):
                            leaks.append(f"{where}: never saw {victim}'s body")
                text = view.to_text()
                for other, role in roles.items():
                    if (
                        other != agent
                        and other not in expected
                        and (
                            f"{other.capitalize()}, a {role}" in text
                            or f"{other.capitalize()}, an {role}" in text
                            or f"{other} is {role}" in text
                            or f"{other} is an {role}" in text
                        )
                    ):
                        leaks.append(f"{where}: the view names {other}'s role")
    # What was actually sent: an ego decision's logged view text may name in view only
    # players inside the camera cone at the decision's tick.
    for ev in events:
        if not isinstance(ev, Decision) or ev.spec.get("state") != "ego" or not ev.view_text:
            continue
        now = poses(ev.tick)
        for line in ev.view_text.splitlines():
            if not line.startswith(("In view now: ", "Bodies in view now: ")):
                continue
            bodies_line = line.startswith("Bodies")
            for name in re.findall(r"([A-Z][a-z]+) \(", line.partition(": ")[2]):
                who = name.lower()
                checked += 1
                pose = now.get(who)
                target = kills.get(who) if bodies_line else (pose[0] if pose else None)
                if target is None or not in_camera(ev.agent, now, target):
                    what = f"{who}'s body" if bodies_line else who
                    leaks.append(
                        f"{ev.agent} (ego, sent) step {ev.step}: names {what} outside the "
                        "field of view"
                    )
    return leaks, checked


def world_conformance(world: Any, geometry: Any, *, frames: bool = True) -> list[str]:
    """Check that a world behaves as the step loop expects; an empty list means it does.

    Starts the world with two seats in the cafeteria, then checks: poses after start;
    a `goto` arrives and ends `ok`; `mark` events carry ticks in the program's span; a
    `wait` longer than the timeout ends `timeout` and the bot stays put; `approach`
    emits `reached` with both positions; teleports land; the clock never goes back;
    and, with `frames`, pictures are 360x640x3 uint8 with JPEG bytes. The world is
    closed by the caller.

    Args:
        world: A `controller.worlds.World`.
        geometry: The map's `ShipGeometry` (the blocks of its map are built).
        frames: Whether to check rendering too.
    """
    import math

    from controller.observation import FRAME_SHAPE
    from controller.protocol import (
        ApproachStep,
        GotoStep,
        LowProgram,
        MarkStep,
        Teleport,
        WaitStep,
    )
    from controller.worlds.base import Seat
    from world.builder import build_blocks

    problems: list[str] = []
    a_pos, b_pos = geometry.seat_pos(0), geometry.seat_pos(4)
    poses = world.start(
        build_blocks(geometry.spec), [Seat("red", "Red", a_pos), Seat("blue", "Blue", b_pos)]
    )
    for agent, pos in (("red", a_pos), ("blue", b_pos)):
        if agent not in poses or math.dist(poses[agent].pos, pos) > 1.5:
            problems.append(f"start: {agent} is not at its seat")
    tick0, _ = world.state()
    target = geometry.room_center(geometry.station_room(geometry.station_ids()[0]))
    report = world.run_programs(
        {
            "red": LowProgram(
                steps=[
                    MarkStep(tag="before"),
                    GotoStep(pos=target, range=1.5),
                    MarkStep(tag="after"),
                ]
            )
        },
        30000,
    )
    out = report.outcomes.get("red")
    if out is None or out.status != "ok":
        problems.append(f"goto: outcome {out}")
    elif math.dist(report.players["red"].pos, target) > 1.6:
        problems.append("goto: ended ok but away from the goal")
    elif [e.tag for e in out.events] != ["before", "after"] or not (
        out.start_tick <= out.events[0].tick <= out.events[1].tick <= out.end_tick
    ):
        problems.append(f"marks: {out.events}")
    if report.tick < tick0:
        problems.append("clock went back")
    here = report.players["red"].pos
    report = world.run_programs(
        {
            "red": LowProgram(
                steps=[
                    WaitStep(ticks=400),
                    MarkStep(tag="never"),
                ]
            )
        },
        1000,
    )
    out = report.outcomes.get("red")
    if out is None or out.status != "timeout" or any(e.tag == "never" for e in out.events):
        problems.append(f"timeout: outcome {out}")
    if math.dist(report.players["red"].pos, here) > 0.5:
        problems.append("timeout: the bot moved")
    world.teleport({"blue": Teleport(pos=geometry.seat_pos(1))})
    report = world.run_programs(
        {
            "red": LowProgram(
                steps=[
                    ApproachStep(agent="blue", range=2.0),
                ]
            )
        },
        30000,
    )
    out = report.outcomes.get("red")
    reached = [e for e in (out.events if out else []) if e.kind == "reached"]
    if not reached or reached[0].agent != "blue" or reached[0].target_pos is None:
        problems.append(f"approach: outcome {out}")
    elif math.dist(reached[0].pos, reached[0].target_pos) > 2.0 + 0.5:
        problems.append("approach: reached out of range")
    if frames:
        pics = world.render(["red", "blue"], None, "jpg")
        for agent in ("red", "blue"):
            f = pics.get(agent)
            if f is None or f.rgb.shape != FRAME_SHAPE or str(f.rgb.dtype) != "uint8":
                problems.append(f"render: bad frame for {agent}")
            elif f.jpeg[:2] != b"\xff\xd8":
                problems.append(f"render: {agent}'s JPEG bytes are not a JPEG")
    return problems
