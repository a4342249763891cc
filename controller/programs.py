"""Programs: what an agent asks its bot to do, as data built from whitelisted primitives.

An agent's decision becomes a `Program`, a short list of actions. The controller
validates it against the rules and the game state before dispatch (an invalid
program is recorded as invalid and the bot stands still; it is never replaced by
some other move), then compiles it into low-level steps that carry only
coordinates (`controller.protocol`). Nothing an agent says is ever run as code.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from controller.engine import Engine
from controller.protocol import (
    ApproachStep,
    ChatStep,
    ChatText,
    FollowStep,
    GotoStep,
    LookStep,
    LowProgram,
    LowStep,
    MarkStep,
    TurnStep,
    Vec3,
    WaitStep,
)
from world.geometry import ShipGeometry, yaw_towards

MAX_ACTIONS = 8
StrikeGuard = Literal["none", "sight", "around"]
"""How a strike re-checks for witnesses at its tick (see `KillTarget.guard`)."""
MAX_WAIT_TICKS = 1200
TASK_MARGIN_TICKS = 2


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GoTo(_Action):
    """Walk to a room, a station or a position (exactly one of them)."""

    op: Literal["go_to"] = "go_to"
    room: str | None = None
    station: int | None = None
    pos: Vec3 | None = None

    @model_validator(mode="after")
    def _one_target(self) -> GoTo:
        given = [x for x in (self.room, self.station, self.pos) if x is not None]
        if len(given) != 1:
            raise ValueError("go_to needs exactly one of room, station, pos")
        return self


class Follow(_Action):
    """Follow a player at a distance for a number of ticks."""

    op: Literal["follow"] = "follow"
    agent: str
    distance: float = Field(default=3.0, gt=0, le=16)
    ticks: int = Field(default=100, ge=1, le=MAX_WAIT_TICKS)


class Look(_Action):
    """Turn to an absolute yaw and pitch (degrees), or look behind (`behind=True`)."""

    op: Literal["look"] = "look"
    yaw: float | None = None
    pitch: float = Field(default=0.0, ge=-90, le=90)
    behind: bool = False

    @model_validator(mode="after")
    def _one_way(self) -> Look:
        if self.behind == (self.yaw is not None):
            raise ValueError("look needs either yaw or behind=true")
        return self


class UseStation(_Action):
    """Go to a task station and stand at it for the task time."""

    op: Literal["use_station"] = "use_station"
    station: int


class PressButton(_Action):
    """Go to the emergency button and press it."""

    op: Literal["press_button"] = "press_button"


class ReportBody(_Action):
    """Go to a body and report it."""

    op: Literal["report"] = "report"
    body: str


class KillTarget(_Action):
    """Close in on a player and strike, within a bounded distance.

    The approach is leashed: it gives up (the program fails with a reason saying so)
    once the target is farther than the leash from where the approach began, so a
    strike never lands far from the place the agent judged safe. The leash is
    `max_distance` when given, capped by the rules' `kill_defer_distance`.
    """

    op: Literal["kill"] = "kill"
    target: str
    max_distance: float | None = Field(default=None, gt=0)
    """Blocks from the approach's start beyond which the target is let go."""
    guard: StrikeGuard = "none"
    """Re-check for witnesses at the strike's own tick, from the killer's own perception
    at that tick: `sight` withholds the strike if any other living crewmate is in the
    killer's field of view (what its camera shows), `around` also if one is within
    sight range all around it (what a privileged state view knows); `none` strikes
    regardless. A withheld strike ends the program `cancelled` with reason
    `strike withheld: witness ...`, and no kill is attempted."""


class Say(_Action):
    """Say one line in a meeting.

    The line is normalised and checked by the rule the bots apply too
    (`world.chat.check_chat`): a newline becomes a space and is spoken; a line the
    server would refuse is refused here, before dispatch, with the rule it breaks.
    """

    op: Literal["say"] = "say"
    text: ChatText


class Wait(_Action):
    """Stand still for a number of ticks."""

    op: Literal["wait"] = "wait"
    ticks: int = Field(ge=0, le=MAX_WAIT_TICKS)


Action = Annotated[
    GoTo | Follow | Look | UseStation | PressButton | ReportBody | KillTarget | Say | Wait,
    Field(discriminator="op"),
]
_ACTIONS: TypeAdapter[list[Action]] = TypeAdapter(list[Action])


class Program(BaseModel):
    """A list of actions for one bot in one step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actions: list[Action] = Field(default_factory=list, max_length=MAX_ACTIONS)


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
