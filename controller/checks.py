"""Conformance and determinism checks, shipped as functions.

`log_violations` (in `controller.logcheck`) audits a finished game's event log
against the rules using the log alone; `determinism_check` plays the same seed
twice and compares the engine events. Both run against the fake world in unit
tests and against the real server in integration tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from controller.config import GameConfig
from controller.events import Event, GameStart, read_events
from controller.logcheck import log_violations as log_violations

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
    observations: Mapping[str, list[Any]], events: list[Event], geometry: Any
) -> tuple[list[str], int]:
    """Check every privileged state view built from the given observations against the log.

    Each last-known position in a view must match a `visibility` entry of that agent
    at that step and the `positions` snapshot; each body must have been in sight; no
    view names the role of anyone but an impostor's own teammates.

    Args:
        observations: Agent -> the `Observation`s it was given, in order.
        events: The game's event log.
        geometry: The map's `ShipGeometry`.

    Returns:
        The leaks found (empty: none) and how many facts were checked.
    """
    from controller.events import Positions, Visibility
    from controller.views import build_view

    start = next(e for e in events if isinstance(e, GameStart))
    roles = start.roles
    vis = {ev.step: ev for ev in events if isinstance(ev, Visibility)}
    pos = {ev.step: ev for ev in events if isinstance(ev, Positions)}
    leaks: list[str] = []
    checked = 0
    for agent, seen in observations.items():
        mates = sorted(a for a, r in roles.items() if r == "impostor" and a != agent)
        for obs in seen:
            view = build_view(obs, "privileged", geometry)
            expected = mates if roles[agent] == "impostor" else []
            if sorted(view.teammates) != expected:
                leaks.append(f"{agent} step {obs.step}: teammates {view.teammates}")
            for other, s in (view.last_seen or {}).items():
                checked += 1
                if s.step > obs.step or other not in vis[s.step].sees.get(agent, []):
                    leaks.append(f"{agent} step {obs.step}: never saw {other} at step {s.step}")
                elif pos[s.step].players[other].pos != s.pos:
                    leaks.append(f"{agent} step {obs.step}: wrong position of {other}")
            for victim, s in (view.bodies_seen or {}).items():
                checked += 1
                if victim not in vis[s.step].bodies.get(agent, []):
                    leaks.append(f"{agent} step {obs.step}: never saw {victim}'s body")
            text = view.to_text()
            for other, role in roles.items():
                if (
                    other != agent
                    and other not in expected
                    and (f"{other.capitalize()}, a {role}" in text or f"{other} is {role}" in text)
                ):
                    leaks.append(f"{agent} step {obs.step}: the view names {other}'s role")
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
