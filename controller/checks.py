"""Conformance and determinism checks, shipped as functions.

`log_violations` (in `controller.logcheck`) audits a finished game's event log
against the rules using the log alone; `determinism_check` plays the same seed
twice and compares the engine events. Both run against the fake world in unit
tests and against the real server in integration tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from controller.config import GameConfig
from controller.events import Decision, Eject, Event, GameStart, Kill
from controller.logcheck import log_violations as log_violations
from controller.record import read_log

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


def rule_events(events: list[Event]) -> list[dict[str, Any]]:
    """The engine's rule events without wall-clock and game-id fields, for comparison."""
    return [ev.model_dump(exclude={"wall", "game_id"}) for ev in events if ev.kind in RULE_KINDS]


DETERMINISM_KINDS = frozenset(
    {"task_start", "task_interrupted", "action_rejected", "eject", "game_end"}
)
"""Engine events compared by `determinism_check` beside `RULE_KINDS`."""


def determinism_check(
    play: Callable[[GameConfig, Path], Path], config: GameConfig, tmp: Path
) -> list[str]:
    """Play the same config twice; return the differences in engine events (none = pass).

    Every event the engine decides is compared (kills, task starts, interruptions and
    completions, reports, meetings, turns, ballots, ejections, rejections, the end),
    with its tick; wall times and the game id are left out.

    Args:
        play: Plays one game with a config into a folder and returns the log's path.
        config: The configuration (its seed fixes everything).
        tmp: A scratch folder.
    """

    def engine_events(path: Path) -> list[dict[str, Any]]:
        kinds = RULE_KINDS | DETERMINISM_KINDS
        return [
            ev.model_dump(exclude={"wall", "game_id"}) for ev in read_log(path) if ev.kind in kinds
        ]

    a = engine_events(play(config, tmp / "a"))
    b = engine_events(play(config, tmp / "b"))
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
      `ego_range` and in line of sight; no roster, no map, no task list. Checked for
      both ego views (`controller.views.EgoView`): the camera's, and the reference's,
      whose players and bodies must have been within 60 degrees of the heading, under 36
      blocks and in line of sight at that moment (recomputed from the logged poses, so
      its far entries beyond the rules' `vision_radius`, read from the observation's
      never-logged far sets, are checked like the near ones), never out of play, each
      player where the log puts it then and each body lying then (killed, not yet
      cleared by a meeting), and which keeps no sighting.
    * **privileged**: every last-known position matches the log at its tick and was
      perceived (a `visibility` entry of the agent at that step, field of view or all
      around) or was within `privileged_radius` of the agent (the roster); each body
      was perceived.
    * **both**: no view names the role of anyone but an impostor's own teammates.
    * **what was sent**: every `decision` of an ego agent whose `view_text` is logged
      names in view only players (and bodies) inside its camera cone at that tick (the
      reference's cone and range for a decision whose spec names `ego_view: reference`,
      whose bodies must be lying then).

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

    from controller.events import MeetingStart, Positions, Trace, Visibility
    from controller.perception import HORIZONTAL_FOV_DEG, in_cone
    from controller.views import (
        REFERENCE_EGO_HALF_ANGLE_DEG,
        REFERENCE_EGO_RANGE,
        EgoView,
        Knowledge,
        StateMode,
    )

    start = next(e for e in events if isinstance(e, GameStart))
    roles = start.roles
    # Each ego view's cone (degrees) and range (blocks).
    cones = {
        "camera": (HORIZONTAL_FOV_DEG, ego_range),
        "reference": (2 * REFERENCE_EGO_HALF_ANGLE_DEG, REFERENCE_EGO_RANGE),
    }
    views: tuple[tuple[StateMode, EgoView], ...] = (
        ("ego", "camera"),
        ("ego", "reference"),
        ("privileged", "camera"),
    )
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
    # Where each player left play: its body, or its first snapshot out of play (an
    # ejected player's seat). A crewmate ghost (`rules.ghost_tasks`) walks on in the
    # log, but the living's views keep it where it left play.
    left_play: dict[str, list[tuple[float, float, float]]] = {v: [pos] for v, pos in kills.items()}
    for snap in snapshots:
        for a, x in snap.players.items():
            if x.status != "alive" and a not in left_play:
                left_play[a] = [x.pos]
    gone_at = {ev.victim: ev.tick for ev in events if isinstance(ev, Kill)}
    gone_at.update({ev.agent: ev.tick for ev in events if isinstance(ev, Eject)})

    def out_of_play(other: str, tick: int) -> bool:
        """Whether `other` had left play before `tick` (killed or ejected)."""
        return other in gone_at and tick > gone_at[other]

    meeting_ticks = [ev.tick for ev in events if isinstance(ev, MeetingStart)]
    killed_at = {ev.victim: ev.tick for ev in events if isinstance(ev, Kill)}

    def lying(victim: str, tick: int, phase: str) -> bool:
        """Whether `victim`'s body lay on the ship at `tick` in `phase`: killed by then
        and not yet cleared (every meeting clears every body at its start; a free-roam
        observation sharing its tick with a meeting's start was built before it, as the
        step it opens is the one whose report or button called the meeting)."""
        killed = killed_at.get(victim)
        return (
            killed is not None
            and killed <= tick
            and phase == "free_roam"
            and not any(killed <= m < tick for m in meeting_ticks)
        )

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

    def moments(tick: int) -> list[dict[str, tuple[tuple[float, float, float], float]]]:
        """Every recorded moment of a tick (a step's end and the next step's start, or a
        meeting's call and its seats, can share one), else the `poses` fallback."""
        out = [
            {a: (x.pos, x.yaw) for a, x in p.players.items()} for p in snapshots if p.tick == tick
        ]
        for t in traces:
            if tick in t.ticks:
                i = t.ticks.index(tick)
                out.append(
                    {
                        a: ((xs[i][0], xs[i][1], xs[i][2]), xs[i][3])
                        for a, xs in t.players.items()
                        if i < len(xs)
                    }
                )
        return out or [poses(tick)]

    def seen_at(
        tick: int, agent: str, target: str | tuple[float, float, float], view: str = "camera"
    ) -> bool:
        """Whether at some recorded moment of `tick` the agent's ego view (`camera` or
        `reference`) held `target` (a player's id, or a position)."""
        for at in moments(tick):
            if isinstance(target, str):
                if target in at and in_camera(agent, at, at[target][0], view):
                    return True
            elif in_camera(agent, at, target, view):
                return True
        return False

    def recorded(tick: int, agent: str) -> list[tuple[float, float, float]]:
        """Every position the log records for `agent` at `tick` (a meeting's call and its
        seats, or a step's end and the next step's start, can share a tick)."""
        out = [p.players[agent].pos for p in snapshots if p.tick == tick and agent in p.players]
        for t in traces:
            if tick in t.ticks and agent in t.players:
                i = t.ticks.index(tick)
                xs = t.players[agent]
                if i < len(xs):
                    out.append((xs[i][0], xs[i][1], xs[i][2]))
        return out

    def matches(tick: int, agent: str, pos: tuple[float, float, float]) -> bool:
        return any(math.dist(q, pos) <= 1e-6 for q in recorded(tick, agent))

    def placed_at(tick: int, agent: str, pos: tuple[float, float, float]) -> bool:
        """Whether the log puts `agent` at `pos` at some moment of `tick` (else at its
        last snapshot before it)."""
        return any(agent in at and math.dist(at[agent][0], pos) <= 1e-6 for at in moments(tick))

    def in_camera(
        agent: str, at: dict[str, Any], target: tuple[float, float, float], view: str = "camera"
    ) -> bool:
        if agent not in at:
            return False
        eye, yaw = at[agent]
        fov, reach = cones[view]
        return in_cone(eye, yaw, target, fov) and geometry.can_see(eye, target, reach + 1e-6)

    leaks: list[str] = []
    checked = 0
    for agent, seen in observations.items():
        mates = sorted(a for a, r in roles.items() if r == "impostor" and a != agent)
        expected = mates if roles[agent] == "impostor" else []
        for mode, ego_view in views:
            knowledge = Knowledge(
                mode,
                geometry,
                ego_range=ego_range,
                privileged_radius=privileged_radius,
                ego_view=ego_view,
            )
            label = "ego reference" if mode == "ego" and ego_view == "reference" else mode
            for raw in seen:
                if raw.ghost:
                    # a ghost's own sight is never logged (log readers take every
                    # viewer for a witness), so its views cannot be checked against
                    # the log; a ghost never speaks or votes, so nothing it knows
                    # reaches the living
                    continue
                view = knowledge.view(knowledge.update(raw))
                where = f"{agent} ({label}) step {raw.step}"
                if sorted(view.teammates) != expected:
                    leaks.append(f"{where}: teammates {view.teammates}")
                if mode == "ego":
                    if view.rooms is not None or view.last_seen is not None or view.tasks:
                        leaks.append(f"{where}: the ego view holds privileged fields")
                    reference = ego_view == "reference"
                    for other, v in view.in_view.items():
                        checked += 1
                        if out_of_play(other, raw.tick):
                            leaks.append(f"{where}: names {other}, out of play, in view")
                        elif not seen_at(raw.tick, agent, other, ego_view):
                            leaks.append(f"{where}: names {other} outside the field of view")
                        elif reference and not placed_at(raw.tick, other, v.pos):
                            leaks.append(f"{where}: wrong position of {other} in view")
                    for victim, v in view.bodies_in_view.items():
                        checked += 1
                        body = kills.get(victim, v.pos)
                        if reference and not lying(victim, raw.tick, raw.phase):
                            leaks.append(f"{where}: names {victim}'s body, lying nowhere then")
                        elif not seen_at(raw.tick, agent, body, ego_view):
                            leaks.append(f"{where}: names {victim}'s body outside the view")
                    if ego_view == "reference" and view.seen_before:
                        leaks.append(f"{where}: keeps sightings ({', '.join(view.seen_before)})")
                    for other, s in view.seen_before.items():
                        checked += 1
                        if not seen_at(s.tick, agent, other):
                            leaks.append(
                                f"{where}: remembers {other} at step {s.step} outside the "
                                "field of view"
                            )
                        elif not matches(s.tick, other, s.pos):
                            leaks.append(f"{where}: wrong position of {other}")
                else:
                    for other, s in (view.last_seen or {}).items():
                        checked += 1
                        then = poses(s.tick)
                        truth = then.get(other)
                        mine = then.get(agent)
                        if s.tick > raw.tick or truth is None:
                            leaks.append(f"{where}: no record of {other} at step {s.step}")
                        elif out_of_play(other, s.tick):
                            # only where it left play: a ghost's walk is never shown
                            if not any(
                                math.dist(q, s.pos) <= 1e-6 for q in left_play.get(other, [])
                            ):
                                leaks.append(f"{where}: shows {other} after it left play")
                        elif math.dist(truth[0], s.pos) > 1e-6 and not matches(
                            s.tick, other, s.pos
                        ):
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
        sent_view = "reference" if ev.spec.get("ego_view") == "reference" else "camera"
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
                if target is None or not in_camera(ev.agent, now, target, sent_view):
                    what = f"{who}'s body" if bodies_line else who
                    leaks.append(
                        f"{ev.agent} (ego, sent) step {ev.step}: names {what} outside the "
                        "field of view"
                    )
                elif not bodies_line and out_of_play(who, ev.tick):
                    leaks.append(
                        f"{ev.agent} (ego, sent) step {ev.step}: names {who}, out of play, in view"
                    )
                elif bodies_line and sent_view == "reference" and not lying(who, ev.tick, ev.phase):
                    leaks.append(
                        f"{ev.agent} (ego, sent) step {ev.step}: names {who}'s body, lying "
                        "nowhere then"
                    )
    return leaks, checked


def world_conformance(world: Any, geometry: Any, *, frames: bool = True) -> list[str]:
    """Check that a world behaves as the step loop expects; an empty list means it does.

    Starts the world with two seats in the cafeteria, then checks: poses after start;
    a `goto` arrives and ends `ok`; `mark` events carry ticks in the program's span; pose
    samples cover the batch at most `sample_interval` ticks apart and end at the final
    poses; a `wait` longer than the timeout ends `timeout` and the bot stays put; the
    game clock stands still outside batches (state, teleport, blocks, broadcast, a wall
    pause, frames) and a `wait` of n ticks moves it by about n; `approach` emits
    `reached` with both positions; the arbiter sees a `mark` as it happens and its
    `cancel` ends the other bot's walk at once (status `cancelled`, stopped where it
    was) while `freeze` ends every program and the clock at the event's tick;
    teleports land; the clock never goes back; and, with `frames`, pictures are
    360x640x3 uint8 with JPEG bytes. The world is closed by the caller.

    Args:
        world: A `controller.worlds.World`.
        geometry: The map's `ShipGeometry` (the blocks of its map are built).
        frames: Whether to check rendering too.
    """
    import math
    import time

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
        sample_interval=5,
    )
    out = report.outcomes.get("red")
    ticks = [smp.tick for smp in report.samples]
    if not ticks or ticks[0] != tick0 or ticks[-1] != report.tick:
        problems.append(f"samples: do not span the batch {tick0}..{report.tick}: {ticks[:3]}...")
    elif any(not 0 < b - a <= 5 for a, b in zip(ticks, ticks[1:], strict=False)):
        problems.append(f"samples: more than 5 ticks apart: {ticks}")
    elif "red" not in report.samples[-1].players or (
        math.dist(report.samples[-1].players["red"].pos, report.players["red"].pos) > 0.2
    ):
        problems.append("samples: the last one is not where the batch ended")
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
    tick1, _ = world.state()
    world.teleport({"blue": Teleport(pos=geometry.seat_pos(1))})
    world.set_blocks([])
    world.broadcast("conformance check")
    time.sleep(0.5)  # a model thinking: no game time
    if frames:
        world.render(["red"], None, "jpg")
    if world.state()[0] != tick1:
        problems.append(f"clock: moved outside a batch ({tick1} -> {world.state()[0]})")
    report = world.run_programs({"red": LowProgram(steps=[WaitStep(ticks=20)])}, 30000)
    if not 20 <= report.tick - tick1 <= 22:
        problems.append(f"clock: a 20-tick wait moved it {report.tick - tick1} ticks")
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
    seat0 = geometry.seat_pos(0)
    farthest = max(
        geometry.rooms, key=lambda r: geometry.path_length(seat0, geometry.room_center(r)) or 0.0
    )
    problems += _directive_conformance(world, geometry, red_walk=geometry.room_center(farthest))
    if frames:
        pics = world.render(["red", "blue"], None, "jpg")
        for agent in ("red", "blue"):
            f = pics.get(agent)
            if f is None or f.rgb.shape != FRAME_SHAPE or str(f.rgb.dtype) != "uint8":
                problems.append(f"render: bad frame for {agent}")
            elif f.jpeg[:2] != b"\xff\xd8":
                problems.append(f"render: {agent}'s JPEG bytes are not a JPEG")
    return problems


def _directive_conformance(world: Any, geometry: Any, *, red_walk: Any) -> list[str]:
    """The arbiter half of `world_conformance`: cancel ends one walk, freeze ends all."""
    import math

    from controller.protocol import (
        GotoStep,
        LowProgram,
        MarkStep,
        PlayerPose,
        ProgramEvent,
        RuleDirective,
        Teleport,
        WaitStep,
    )

    problems: list[str] = []
    seen: list[tuple[str, ProgramEvent, dict[str, PlayerPose]]] = []

    def arbiter(
        agent: str, event: ProgramEvent, poses: dict[str, PlayerPose]
    ) -> RuleDirective | None:
        seen.append((agent, event, poses))
        if event.tag == "kill":
            return RuleDirective(cancel=["red"], reason="killed")
        if event.tag == "report":
            return RuleDirective(freeze=True, reason="meeting")
        return None

    world.teleport(
        {
            "red": Teleport(pos=geometry.seat_pos(0)),
            "blue": Teleport(pos=geometry.seat_pos(4)),
        }
    )
    report = world.run_programs(
        {
            "red": LowProgram(steps=[GotoStep(pos=red_walk, range=1.5), MarkStep(tag="there")]),
            "blue": LowProgram(steps=[WaitStep(ticks=20), MarkStep(tag="kill")]),
        },
        30000,
        arbiter=arbiter,
    )
    red = report.outcomes.get("red")
    kills = [(e, p) for a, e, p in seen if a == "blue" and e.tag == "kill"]
    if len(kills) != 1 or "red" not in kills[0][1]:
        problems.append(f"arbiter: not called once for the mark with every pose: {seen}")
    elif red is None or red.status != "cancelled" or red.reason != "killed":
        problems.append(f"cancel: red's walk was not cancelled: {red}")
    else:
        event, poses = kills[0]
        if not event.tick <= red.end_tick <= event.tick + 1:
            problems.append(f"cancel: red ended at tick {red.end_tick}, the kill was {event.tick}")
        if any(e.tag == "there" for e in red.events):
            problems.append("cancel: red's program went on after the cancel")
        if math.dist(report.players["red"].pos, poses["red"].pos) > 1.0:
            problems.append("cancel: red did not stop where it was")
    seen.clear()
    report = world.run_programs(
        {
            "red": LowProgram(steps=[GotoStep(pos=red_walk, range=1.5), WaitStep(ticks=100)]),
            "blue": LowProgram(steps=[WaitStep(ticks=10), MarkStep(tag="report")]),
        },
        30000,
        arbiter=arbiter,
    )
    reports = [e for _, e, _ in seen if e.tag == "report"]
    statuses = {a: o.status for a, o in report.outcomes.items()}
    if not reports or statuses != {"red": "cancelled", "blue": "cancelled"}:
        problems.append(f"freeze: not every program was cancelled: {statuses}")
    elif report.tick != reports[0].tick:
        problems.append(f"freeze: the clock ran on to {report.tick} after {reports[0].tick}")
    return problems
