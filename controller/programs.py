"""Programs: what an agent asks its bot to do, as data built from whitelisted primitives.

An agent's decision becomes a `Program`, a short list of actions. The controller
validates it against the rules and the game state before dispatch (an invalid
program is recorded as invalid and the bot stands still; it is never replaced by
some other move), then compiles it into low-level steps that carry only
coordinates (`controller.protocol`). Nothing an agent says is ever run as code.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from controller.actions import _ACTIONS as _ACTIONS
from controller.actions import MAX_ACTIONS as MAX_ACTIONS
from controller.actions import MAX_WAIT_TICKS as MAX_WAIT_TICKS
from controller.actions import Action as Action
from controller.actions import AnyAction as AnyAction
from controller.actions import Follow as Follow
from controller.actions import GoTo as GoTo
from controller.actions import KillTarget as KillTarget
from controller.actions import Look as Look
from controller.actions import PressButton as PressButton
from controller.actions import Program as Program
from controller.actions import ReportBody as ReportBody
from controller.actions import Say as Say
from controller.actions import StrikeGuard as StrikeGuard
from controller.actions import UseStation as UseStation
from controller.actions import Wait as Wait
from controller.actions import _Action
from controller.engine import Engine
from controller.protocol import (
    ApproachStep,
    ChatStep,
    FollowStep,
    GotoStep,
    LookStep,
    LowProgram,
    LowStep,
    MarkStep,
    TurnStep,
    WaitStep,
)
from world.geometry import ShipGeometry, yaw_towards

TASK_MARGIN_TICKS = 2


class ProgramError(ValueError):
    """A program that may not run; the message says why."""


def parse_program(data: Any) -> Program:
    """Build a Program from untrusted data (a list of action dicts).

    Raises:
        ProgramError: naming the bad action and field.
    """
    if isinstance(data, dict) and "actions" in data:
        data = data["actions"]
    if not isinstance(data, list):
        raise ProgramError("a program is a list of actions")
    if len(data) > MAX_ACTIONS:
        raise ProgramError(f"a program has at most {MAX_ACTIONS} actions, got {len(data)}")
    try:
        return Program(actions=_ACTIONS.validate_python(data))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ProgramError(f"action {where}: {err['msg']}") from exc


def typed_program(actions: list[Any]) -> Program | None:
    """The Program of a list of typed actions, each validated again; None when the list
    holds anything else (untrusted data, for `parse_program`).

    A builder's actions are values it made itself, so one that fails here was built
    around the checks (`model_construct`) or broken afterwards: a harness bug.

    Raises:
        ProgramError: naming the bad action and field.
    """
    if not all(isinstance(a, _Action) for a in actions):
        return None
    if len(actions) > MAX_ACTIONS:
        raise ProgramError(f"a program has at most {MAX_ACTIONS} actions, got {len(actions)}")
    try:
        return Program(actions=actions)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"][1:])
        raise ProgramError(f"action {where}: {err['msg']}") from exc
    except AttributeError as exc:  # a field model_construct never set
        raise ProgramError(f"an action lacks a field: {exc}") from exc


def validate_program(program: Program, agent: str, engine: Engine, geometry: ShipGeometry) -> None:
    """Check a program against the rules and the state before dispatch.

    Timing rules (cooldowns, ranges, the button lockout) are checked when the
    action lands, by the engine; this checks what is never allowed.

    Raises:
        ProgramError: the first reason the program may not run.
    """
    player = engine.players[agent]
    if not player.alive:
        raise ProgramError(f"{agent} is not alive")
    phase = engine.phase
    for i, action in enumerate(program.actions):
        where = f"action {i} ({action.op})"
        if phase == "meeting":
            if not isinstance(action, Say | Wait):
                raise ProgramError(f"{where}: only say or wait during a meeting")
            continue
        if phase != "free_roam":
            raise ProgramError(f"{where}: no actions during {phase}")
        if isinstance(action, Say):
            raise ProgramError(f"{where}: players speak only in meetings")
        if isinstance(action, GoTo):
            if action.room is not None and action.room not in geometry.rooms:
                raise ProgramError(f"{where}: unknown room {action.room!r}")
            if action.station is not None and action.station not in engine.stations:
                raise ProgramError(f"{where}: unknown station {action.station}")
        elif isinstance(action, UseStation):
            if action.station not in engine.stations:
                raise ProgramError(f"{where}: unknown station {action.station}")
        elif isinstance(action, Follow):
            _check_living_other(where, action.agent, agent, engine)
        elif isinstance(action, KillTarget):
            if player.role != "impostor":
                raise ProgramError(f"{where}: only impostors kill")
            _check_living_other(where, action.target, agent, engine)
            if action.target in engine.teammates(agent):
                raise ProgramError(f"{where}: {action.target} is a fellow impostor")
        elif isinstance(action, ReportBody):
            body = engine.bodies.get(action.body)
            if body is None or body.cleared:
                raise ProgramError(f"{where}: there is no body of {action.body!r}")


def _check_living_other(where: str, target: str, agent: str, engine: Engine) -> None:
    if target == agent:
        raise ProgramError(f"{where}: cannot target oneself")
    p = engine.players.get(target)
    if p is None:
        raise ProgramError(f"{where}: unknown player {target!r}")
    if not p.alive:
        raise ProgramError(f"{where}: {target} is not alive")


def compile_program(
    program: Program,
    engine: Engine,
    geometry: ShipGeometry,
    task_started: tuple[int, int] | None = None,
) -> LowProgram:
    """Turn a validated program into low-level steps with coordinates and marks.

    Rule-relevant moments become `mark` events (`task_start:S`, `task_resume:S`,
    `task_done:S`, `button`, `report:VICTIM`) or an approach's `reached` event (a
    strike); the step loop hands them to the engine in tick order.

    Args:
        program: A validated program.
        engine: The rules engine (rules, bodies, clock).
        geometry: The map.
        task_started: `(station, start tick)` of a task this agent began at an earlier
            step and is still standing at (a step timeout cut it short); using that
            station again resumes it and waits only for the rest of the task time.
    """
    rules = engine.rules
    steps: list[LowStep] = []
    previous: object = None
    for action in program.actions:
        after_task, previous = isinstance(previous, UseStation), action
        if isinstance(action, GoTo):
            if action.room is not None:
                steps.append(GotoStep(pos=geometry.room_center(action.room), range=1.5))
            elif action.station is not None:
                steps.append(GotoStep(pos=geometry.station_pos(action.station), range=0.6))
            elif action.pos is not None:
                steps.append(GotoStep(pos=action.pos, range=1.0))
        elif isinstance(action, Follow):
            steps.append(
                FollowStep(agent=action.agent, distance=action.distance, ticks=action.ticks)
            )
        elif isinstance(action, Look):
            if action.behind and after_task:
                # At a station the player faces its wall; `use_station` already ends
                # turned into the room, which is what looking behind means there.
                # Turning another 180 degrees would face the wall again.
                continue
            if action.behind:
                steps.append(TurnStep(yaw=180.0))
            else:
                steps.append(LookStep(yaw=float(action.yaw or 0.0), pitch=action.pitch))
        elif isinstance(action, UseStation):
            wait, mark = rules.task_ticks, f"task_start:{action.station}"
            if task_started is not None and task_started[0] == action.station:
                wait = max(0, rules.task_ticks - (engine.tick - task_started[1]))
                mark = f"task_resume:{action.station}"
            steps += [
                GotoStep(pos=geometry.station_pos(action.station), range=0.6),
                MarkStep(tag=mark),
                # Two ticks of margin: the marks are stamped on the world's clock, whose
                # rounding may make a wait of exactly N ticks read as N-1.
                WaitStep(ticks=wait + TASK_MARGIN_TICKS),
                MarkStep(tag=f"task_done:{action.station}"),
                # Stations stand by the walls: turn to face into the room when done, as a
                # player would, so the next frame shows the room rather than a wall.
                LookStep(yaw=round(_into_room(geometry, action.station), 1)),
            ]
        elif isinstance(action, PressButton):
            steps += [
                GotoStep(pos=geometry.button_pos(), range=min(1.5, rules.button_range * 0.6)),
                MarkStep(tag="button"),
            ]
        elif isinstance(action, ReportBody):
            body = engine.bodies[action.body]
            steps += [
                GotoStep(pos=body.pos, range=min(1.2, rules.report_range * 0.6)),
                MarkStep(tag=f"report:{action.body}"),
            ]
        elif isinstance(action, KillTarget):
            leash = rules.kill_defer_distance
            if action.max_distance is not None:
                leash = min(leash, action.max_distance)
            steps.append(
                ApproachStep(agent=action.target, range=rules.kill_range * 0.6, leash=leash)
            )
        elif isinstance(action, Say):
            steps.append(ChatStep(text=action.text))
        elif isinstance(action, Wait):
            steps.append(WaitStep(ticks=action.ticks))
    return LowProgram(steps=steps)


def strike_guards(program: Program) -> dict[str, StrikeGuard]:
    """Target -> witness guard of every guarded strike in a program."""
    return {
        a.target: a.guard
        for a in program.actions
        if isinstance(a, KillTarget) and a.guard != "none"
    }


def _into_room(geometry: ShipGeometry, station: int) -> float:
    """Yaw from a station towards the centre of its room."""
    return yaw_towards(
        geometry.station_pos(station), geometry.room_center(geometry.station_room(station))
    )
